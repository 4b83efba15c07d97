// Cache-blocked dense matrix product C += A * B in double: 64x64x64 blocks, i-k-j order inside a block so the
// innermost loop streams a row of B and a row of C (contiguous, no reduction). Kind: matmul (compute-bound).
#include <algorithm>
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

void matmul_blocked(const double* A, const double* B, double* C, int n) {
    const int bs = 64;
    for (int ii = 0; ii < n; ii += bs)
        for (int kk = 0; kk < n; kk += bs)
            for (int jj = 0; jj < n; jj += bs) {
                const int iend = std::min(ii + bs, n), kend = std::min(kk + bs, n), jend = std::min(jj + bs, n);
                for (int i = ii; i < iend; ++i)
                    for (int k = kk; k < kend; ++k) {
                        const double a = A[i * n + k];
                        for (int j = jj; j < jend; ++j)
                            C[i * n + j] += a * B[k * n + j];
                    }
            }
}

int main() {
    const int n = 896;
    std::vector<double> A(n * n), B(n * n), C(n * n, 0.0);
    uint64_t seed = 2;
    for (auto& v : A) v = uniform_pm1(seed);
    for (auto& v : B) v = uniform_pm1(seed);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    matmul_blocked(A.data(), B.data(), C.data(), n);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < n * n; ++i) checksum += C[i] * (1.0 + (i % 5));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
