// Naive dense matrix product C = A * B in float, i-j-k order (the textbook triple loop): the inner k loop
// is a float dot product whose B operand strides by a whole row. Kind: matmul (compute, strided access).
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
static float uniform_pm1(uint64_t& s) {  // exact: a 24-bit integer times 2^-23, minus 1
    return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

void matmul(const float* A, const float* B, float* C, int n) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < n; ++k)
                sum += A[i * n + k] * B[k * n + j];
            C[i * n + j] = sum;
        }
}

int main() {
    const int n = 640;
    std::vector<float> A(n * n), B(n * n), C(n * n);
    uint64_t seed = 1;
    for (auto& v : A) v = uniform_pm1(seed);
    for (auto& v : B) v = uniform_pm1(seed);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    matmul(A.data(), B.data(), C.data(), n);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < n * n; ++i) checksum += C[i] * (1.0 + (i % 7));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
