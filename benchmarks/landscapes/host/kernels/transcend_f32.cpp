// Element-wise transcendental math in float: a damped oscillation plus a log term and a root per element,
// expf / sinf / logf / sqrtf from <cmath>, over 1 Mi elements, ten passes with different parameters.
// Kind: transcendental (libm-call bound; vectorizable only with vector math functions).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

static uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static float uniform01(uint64_t& s) { return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 16777216.0f); }

void evaluate(const float* x, float* out, int n, float decay, float freq) {
    for (int i = 0; i < n; ++i) {
        const float t = x[i];
        out[i] = std::exp(-decay * t) * std::sin(freq * t) + 0.25f * std::log(1.0f + t) + 0.125f * std::sqrt(t);
    }
}

int main() {
    const int n = 1 << 20, passes = 10;
    std::vector<float> x(n), out(n);
    uint64_t seed = 6;
    for (auto& v : x) v = 8.0f * uniform01(seed);

    double checksum = 0.0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) {
        evaluate(x.data(), out.data(), n, 0.25f + 0.125f * p, 1.5f + p);
        checksum += out[p * 1009] + out[n - 1 - p];
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    for (int i = 0; i < n; ++i) checksum += out[i];
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
