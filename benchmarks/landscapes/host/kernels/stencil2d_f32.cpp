// 2D 5-point Jacobi relaxation in float on a 1024 x 1024 grid with fixed boundary values, ping-pong between
// two buffers. Kind: stencil (memory / streaming, vectorizable).
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

void jacobi_step(const float* in, float* out, int nx, int ny, float center, float side) {
    for (int y = 1; y < ny - 1; ++y)
        for (int x = 1; x < nx - 1; ++x) {
            const int i = y * nx + x;
            out[i] = center * in[i] + side * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
        }
}

int main() {
    const int nx = 1024, ny = 1024, steps = 500;
    std::vector<float> a(nx * ny), b(nx * ny);
    uint64_t seed = 3;
    for (auto& v : a) v = uniform01(seed);
    b = a;  // the boundary stays fixed in both buffers

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    float* in = a.data();
    float* out = b.data();
    for (int s = 0; s < steps; ++s) {
        jacobi_step(in, out, nx, ny, 0.2f, 0.2f);
        std::swap(in, out);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < nx * ny; ++i) checksum += in[i] * (1.0 + (i % 3));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
