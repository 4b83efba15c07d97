// y += a * x through plain float pointers in a function of its own (the compiler cannot see whether x and y
// overlap: both point into one work buffer), applied many times over L1/L2-resident vectors: two
// accumulators y0, y1 take turns, each adding +-a times one of two fixed inputs x2, x3.
// Kind: saxpy (streaming FMA, alias-check sensitive).
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
static float uniform_pm1(uint64_t& s) {
    return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

void saxpy(float* y, const float* x, float a, int n) {
    for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

int main() {
    const int n = 3000, reps = 600000, vectors = 4;
    std::vector<float> work(static_cast<size_t>(n) * vectors);  // four vectors of n floats, back to back
    uint64_t seed = 11;
    for (auto& v : work) v = uniform_pm1(seed);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
        float* y = work.data() + static_cast<size_t>(r % 2) * n;
        const float* x = work.data() + static_cast<size_t>(2 + (r / 2) % 2) * n;
        saxpy(y, x, ((r / 2) & 1) ? 0.0009765625f : -0.0009765625f, n);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (size_t i = 0; i < work.size(); ++i) checksum += work[i] * (1.0 + (i % 9));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
