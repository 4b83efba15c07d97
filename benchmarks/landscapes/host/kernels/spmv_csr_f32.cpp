// Sparse matrix-vector products in CSR format (float values, int column indices), 8..40 random columns per
// row, used in a power-iteration-like loop x <- A x / scale. Kind: spmv (irregular gathers through column
// indices, float row sums).
#include <chrono>
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
static float uniform01(uint64_t& s) { return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 16777216.0f); }

struct Csr {
    int rows = 0;
    std::vector<int> row_ptr, col;
    std::vector<float> val;
};

void spmv(const Csr& A, const float* x, float* y) {
    for (int r = 0; r < A.rows; ++r) {
        float sum = 0.0f;
        for (int k = A.row_ptr[r]; k < A.row_ptr[r + 1]; ++k) sum += A.val[k] * x[A.col[k]];
        y[r] = sum;
    }
}

int main() {
    const int rows = 1 << 17, iterations = 56;
    Csr A;
    A.rows = rows;
    A.row_ptr.push_back(0);
    uint64_t seed = 9;
    for (int r = 0; r < rows; ++r) {
        const int nnz = 8 + static_cast<int>(splitmix64(seed) % 33);
        for (int k = 0; k < nnz; ++k) {
            A.col.push_back(static_cast<int>(splitmix64(seed) % rows));
            A.val.push_back(uniform01(seed));
        }
        A.row_ptr.push_back(static_cast<int>(A.col.size()));
    }
    std::vector<float> x(rows), y(rows);
    for (auto& v : x) v = uniform01(seed);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it) {
        spmv(A, x.data(), y.data());
        for (int r = 0; r < rows; ++r) x[r] = y[r] * (1.0f / 12.0f);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int r = 0; r < rows; ++r) checksum += x[r];
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
