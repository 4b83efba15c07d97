// Segmented inclusive prefix sum (scan) of floats: a 4 Mi float series cut into rows of 1024, each row
// scanned from zero (y[i] = y[i-1] + x[i]), many passes over a slightly changed input. A loop-carried float
// add per element: gcc does not vectorize a scan, and reassociation (-ffast-math) has no reduction to
// reorder. Kind: scan (serial float dependency chain, streaming loads and stores).
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

void inclusive_scan(const float* x, float* y, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) {
        s += x[i];
        y[i] = s;
    }
}

int main() {
    const int row = 1024, rows = 4096, passes = 44;
    const size_t n = static_cast<size_t>(row) * rows;
    std::vector<float> x(n), y(n);
    uint64_t seed = 15;
    for (auto& v : x) v = uniform_pm1(seed);

    double checksum = 0.0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) {
        x[static_cast<size_t>(p) * 8191] += 0.5f;
        double totals = 0.0;  // the row totals (each pass's last elements) feed the checksum
        for (int r = 0; r < rows; ++r) {
            float* out = y.data() + static_cast<size_t>(r) * row;
            inclusive_scan(x.data() + static_cast<size_t>(r) * row, out, row);
            totals += out[row - 1];
        }
        checksum += totals;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    for (size_t i = 0; i < n; ++i) checksum += y[i] * (1.0 + static_cast<double>(i % 7));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
