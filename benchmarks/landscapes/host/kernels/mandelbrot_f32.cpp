// Mandelbrot escape-time counts in float: per pixel of a 1280 x 928 grid over [-2.2, 0.8] x [-1.0, 1.0],
// z <- z^2 + c until |z|^2 > 4 or 160 iterations; the counts of all pixels feed the checksum. A data-dependent
// loop exit per pixel (branchy float code; gcc does not vectorize the early exit). Kind: escape time
// (branchy float iteration).
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

int escape_count(float cr, float ci, int max_iter) {
    float zr = 0.0f, zi = 0.0f;
    int k = 0;
    while (k < max_iter) {
        const float zr2 = zr * zr, zi2 = zi * zi;
        if (zr2 + zi2 > 4.0f) break;
        zi = 2.0f * zr * zi + ci;
        zr = zr2 - zi2 + cr;
        ++k;
    }
    return k;
}

void mandelbrot(const float* cr, const float* ci, int w, int h, int max_iter, int* counts) {
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) counts[y * w + x] = escape_count(cr[x], ci[y], max_iter);
}

int main() {
    const int w = 1280, h = 928, max_iter = 160;
    std::vector<float> cr(w), ci(h);
    uint64_t seed = 18;
    const float jitter = static_cast<float>(splitmix64(seed) >> 40) * (1.0f / 16777216.0f) * 1e-3f;
    for (int x = 0; x < w; ++x) cr[x] = -2.2f + 3.0f * (static_cast<float>(x) + jitter) / static_cast<float>(w);
    for (int y = 0; y < h; ++y) ci[y] = -1.0f + 2.0f * (static_cast<float>(y) + jitter) / static_cast<float>(h);
    std::vector<int> counts(static_cast<size_t>(w) * h);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    mandelbrot(cr.data(), ci.data(), w, h, max_iter, counts.data());
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) checksum += counts[i] * (1.0 + static_cast<double>(i % 3));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
