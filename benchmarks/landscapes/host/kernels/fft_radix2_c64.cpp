// Iterative in-place radix-2 decimation-in-time FFT of 2^16 std::complex<double> values (bit-reversal
// permutation, precomputed twiddles), forward and inverse transforms alternating with a 1/n scaling.
// Kind: fft (complex double arithmetic, strided butterflies).
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <utility>
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

using cd = std::complex<double>;

void fft(std::vector<cd>& a, const std::vector<cd>& twiddle, bool inverse) {
    const size_t n = a.size();
    for (size_t i = 1, j = 0; i < n; ++i) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        const size_t half = len / 2, step = n / len;
        for (size_t i = 0; i < n; i += len)
            for (size_t k = 0; k < half; ++k) {
                cd w = twiddle[k * step];
                if (inverse) w = std::conj(w);
                const cd u = a[i + k];
                const cd v = a[i + k + half] * w;
                a[i + k] = u + v;
                a[i + k + half] = u - v;
            }
    }
}

int main() {
    const size_t n = size_t(1) << 16;
    const int rounds = 20;
    std::vector<cd> a(n), twiddle(n / 2);
    const double pi = 3.14159265358979323846;
    for (size_t k = 0; k < n / 2; ++k) twiddle[k] = std::polar(1.0, -2.0 * pi * double(k) / double(n));
    uint64_t seed = 12;
    for (auto& v : a) v = cd(uniform_pm1(seed), uniform_pm1(seed));

    double checksum = 0.0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) {
        fft(a, twiddle, false);
        checksum += std::abs(a[r + 1]);
        fft(a, twiddle, true);
        for (auto& v : a) v *= 1.0 / double(n);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    for (size_t i = 0; i < n; ++i) checksum += a[i].real() * (1.0 + (i % 3)) + a[i].imag();
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
