// Polynomial evaluation by Horner's rule in double: a degree-20 polynomial (its coefficients change every
// pass) evaluated at 1 Mi points in [-1, 1), each result added to a per-point accumulator. Independent
// points (vectorizable across them), a 20-step multiply-add chain per point (FMA contraction under
// -march=native). Kind: polynomial (double multiply-add chains).
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
static double uniform_pm1(uint64_t& s) {
    return static_cast<double>(splitmix64(s) >> 11) * (1.0 / 4503599627370496.0) - 1.0;
}

constexpr int DEGREE = 20;

// acc[i] += c[0] + c[1] x + ... + c[DEGREE] x^DEGREE at x = x[i]
void horner(const double* x, double* acc, const double* c, int n) {
    for (int i = 0; i < n; ++i) {
        const double t = x[i];
        double p = c[DEGREE];
        for (int k = DEGREE - 1; k >= 0; --k) p = p * t + c[k];
        acc[i] += p;
    }
}

int main() {
    const int n = 1 << 20, passes = 21;
    std::vector<double> x(n), acc(n, 0.0), coeffs(static_cast<size_t>(passes) * (DEGREE + 1));
    uint64_t seed = 17;
    for (auto& v : x) v = uniform_pm1(seed);
    for (int p = 0; p < passes; ++p)  // 1 + decaying random terms: the values stay near 1
        for (int k = 0; k <= DEGREE; ++k)
            coeffs[p * (DEGREE + 1) + k] = (k == 0 ? 1.0 : 0.0) + uniform_pm1(seed) / (2.0 * (k + 1));

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) horner(x.data(), acc.data(), coeffs.data() + p * (DEGREE + 1), n);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < n; ++i) checksum += acc[i] * (1.0 + (i % 9));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
