// Cross-correlation of a signal with a template, r[lag] = sum_i signal[i + lag] * tmpl[i], accumulated in
// float: one long float dot product per lag (a reduction that only reassociation, e.g. -ffast-math, lets the
// compiler vectorize). Kind: reduction (float dot products, L2-resident).
#include <chrono>
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

float dot(const float* a, const float* b, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

int main() {
    const int m = 16384, lags = 20480;
    std::vector<float> signal(m + lags), tmpl(m), r(lags);
    uint64_t seed = 5;
    for (auto& v : signal) v = uniform01(seed);
    for (auto& v : tmpl) v = uniform01(seed) - 0.5f;

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int lag = 0; lag < lags; ++lag) r[lag] = dot(signal.data() + lag, tmpl.data(), m);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int lag = 0; lag < lags; ++lag) checksum += r[lag] * r[lag];
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
