// Byte histogram: 256 uint32 bins counted over a 16 MiB buffer of skewed bytes (a text-like distribution with
// frequent repeats, so consecutive increments often hit the same bin), 23 passes, one scatter increment per
// byte; the bins of each pass feed the checksum. Kind: histogram (integer scatter increments, a
// memory-carried dependency through the bins).
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

void histogram(const unsigned char* p, size_t n, uint32_t* bins) {
    for (size_t i = 0; i < n; ++i) ++bins[p[i]];
}

int main() {
    const size_t n = size_t(1) << 24;
    const int passes = 23;
    std::vector<unsigned char> data(n);
    uint64_t seed = 14;
    for (size_t i = 0; i < n;) {  // a skewed byte distribution with runs of repeated bytes
        const uint64_t r = splitmix64(seed);
        const unsigned v = static_cast<unsigned>(r & 0xff);
        const unsigned char c = static_cast<unsigned char>((r >> 8) % 4 == 0 ? v : 96 + v % 27);
        const size_t rep = 1 + ((r >> 16) % 4 == 0 ? (r >> 20) % 6 : 0);
        for (size_t k = 0; k < rep && i < n; ++k) data[i++] = c;
    }
    std::vector<uint32_t> bins(256);

    uint64_t checksum = 0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) {
        data[static_cast<size_t>(p) * 4099] = static_cast<unsigned char>(p * 37);
        for (auto& b : bins) b = 0;
        histogram(data.data(), n, bins.data());
        for (int b = 0; b < 256; ++b) checksum = checksum * 1000003u + bins[b];
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
