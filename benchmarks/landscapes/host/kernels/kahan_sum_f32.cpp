// Mean and variance of windows of a long float series with Kahan (compensated) summation of x and x*x, the
// way numerics code keeps float sums accurate. The compensation is exact-arithmetic nonsense to a compiler
// allowed to reassociate (-ffast-math removes it and the sums lose their accuracy). Kind: compensated
// reduction (a serial dependency chain of float adds).
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

struct Moments {
    float mean, variance;
};

Moments kahan_moments(const float* x, int n) {
    float s = 0.0f, c = 0.0f;    // sum of x and its compensation
    float s2 = 0.0f, c2 = 0.0f;  // sum of x*x and its compensation
    for (int i = 0; i < n; ++i) {
        const float y = x[i] - c;
        const float t = s + y;
        c = (t - s) - y;
        s = t;
        const float y2 = x[i] * x[i] - c2;
        const float t2 = s2 + y2;
        c2 = (t2 - s2) - y2;
        s2 = t2;
    }
    const float mean = s / n;
    return {mean, s2 / n - mean * mean};
}

int main() {
    const int n = 1 << 22, window = 1 << 21, windows = 32;
    std::vector<float> series(n);
    uint64_t seed = 13;
    for (int i = 0; i < n; ++i) series[i] = 100.0f + uniform01(seed);  // a level plus small fluctuations

    double checksum = 0.0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int w = 0; w < windows; ++w) {
        const Moments m = kahan_moments(series.data() + w * (n - window) / windows, window);
        checksum += m.mean + 1000.0 * m.variance;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
