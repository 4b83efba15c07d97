// A 3x3 convolution layer on a float image: 4 input channels to 4 output channels (144 multiply-adds per
// output pixel, weights read from an array), 512 x 512 pixels, applied repeatedly in ping-pong buffers (the
// output is the next input). The weights are positive and each output channel's sum to 1, so the image
// stays in [0, 1) (a blur: no growth, no denormals). Kind: convolution (compute-bound float multiply-adds,
// vectorizable along a row).
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

constexpr int C = 4;  // channels in and out

// out[co][y][x] = sum over ci, dy, dx of w[co][ci][dy][dx] * in[ci][y + dy - 1][x + dx - 1] (interior only;
// the one-pixel border is copied from the input)
void conv3x3(const float* in, float* out, const float* w, int h, int wd) {
    const size_t plane = static_cast<size_t>(h) * wd;
    for (int co = 0; co < C; ++co) {
        for (int y = 1; y < h - 1; ++y) {
            float* o = out + co * plane + static_cast<size_t>(y) * wd;
            for (int x = 1; x < wd - 1; ++x) o[x] = 0.0f;
            for (int ci = 0; ci < C; ++ci) {
                const float* k = w + (co * C + ci) * 9;
                const float* r0 = in + ci * plane + static_cast<size_t>(y - 1) * wd;
                const float* r1 = r0 + wd;
                const float* r2 = r1 + wd;
                for (int x = 1; x < wd - 1; ++x) {
                    o[x] += k[0] * r0[x - 1] + k[1] * r0[x] + k[2] * r0[x + 1]
                          + k[3] * r1[x - 1] + k[4] * r1[x] + k[5] * r1[x + 1]
                          + k[6] * r2[x - 1] + k[7] * r2[x] + k[8] * r2[x + 1];
                }
            }
        }
    }
}

int main() {
    const int h = 512, wd = 512, steps = 56;
    const size_t plane = static_cast<size_t>(h) * wd;
    std::vector<float> a(C * plane), b(C * plane), w(C * C * 9);
    uint64_t seed = 16;
    for (auto& v : a) v = uniform01(seed);
    for (int co = 0; co < C; ++co) {
        float sum = 0.0f;
        for (int k = 0; k < C * 9; ++k) sum += (w[co * C * 9 + k] = 0.5f + 0.5f * uniform01(seed));
        for (int k = 0; k < C * 9; ++k) w[co * C * 9 + k] /= sum;
    }
    b = a;  // the border stays the input's

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        if (s % 2 == 0)
            conv3x3(a.data(), b.data(), w.data(), h, wd);
        else
            conv3x3(b.data(), a.data(), w.data(), h, wd);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    const std::vector<float>& last = (steps % 2 == 0) ? a : b;
    double checksum = 0.0;
    for (size_t i = 0; i < last.size(); ++i) checksum += last[i] * (1.0 + static_cast<double>(i % 5));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
