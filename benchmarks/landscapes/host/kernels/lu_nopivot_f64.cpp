// Dense LU factorization without pivoting (Doolittle, k-i-j order) of 64 x 64 strictly diagonally dominant
// double matrices, each followed by the forward and back substitution of one right-hand side (column
// oriented: every update is an axpy, no dot-product reduction); 7600 systems from 16 stored matrices (each
// factored from a fresh copy). The solutions feed the checksum. Kind: dense factorization (double
// row updates with shrinking trip counts, a division per pivot row).
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
static double uniform_pm1(uint64_t& s) {
    return static_cast<double>(splitmix64(s) >> 11) * (1.0 / 4503599627370496.0) - 1.0;
}

constexpr int N = 64;

// In place: a (row-major N x N) becomes L (unit, below the diagonal) and U; x holds b and becomes A^-1 b.
void lu_solve(double* a, double* x) {
    for (int k = 0; k < N; ++k) {
        const double* rk = a + k * N;
        for (int i = k + 1; i < N; ++i) {
            double* ri = a + i * N;
            const double l = ri[k] / rk[k];
            ri[k] = l;
            for (int j = k + 1; j < N; ++j) ri[j] -= l * rk[j];
        }
    }
    for (int k = 0; k < N; ++k)  // L y = b
        for (int i = k + 1; i < N; ++i) x[i] -= a[i * N + k] * x[k];
    for (int k = N - 1; k >= 0; --k) {  // U x = y
        x[k] /= a[k * N + k];
        for (int i = 0; i < k; ++i) x[i] -= a[i * N + k] * x[k];
    }
}

int main() {
    const int stored = 16, systems = 7600;
    std::vector<double> mats(static_cast<size_t>(stored) * N * N), rhs(static_cast<size_t>(systems) * N);
    uint64_t seed = 23;
    for (int m = 0; m < stored; ++m) {
        double* a = mats.data() + static_cast<size_t>(m) * N * N;
        for (int i = 0; i < N; ++i) {
            double off = 0.0;
            for (int j = 0; j < N; ++j) {
                a[i * N + j] = uniform_pm1(seed);
                if (j != i) off += std::fabs(a[i * N + j]);
            }
            a[i * N + i] = (a[i * N + i] < 0 ? -1.0 : 1.0) * (off + 1.0 + std::fabs(a[i * N + i]));
        }
    }
    for (auto& v : rhs) v = uniform_pm1(seed);
    std::vector<double> work(N * N);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < systems; ++s) {
        const double* a = mats.data() + static_cast<size_t>(s % stored) * N * N;
        for (int k = 0; k < N * N; ++k) work[k] = a[k];
        lu_solve(work.data(), rhs.data() + static_cast<size_t>(s) * N);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (size_t i = 0; i < rhs.size(); ++i) checksum += rhs[i] * (1.0 + static_cast<double>(i % 13));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
