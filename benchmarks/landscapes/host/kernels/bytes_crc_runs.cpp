// Byte processing over an 8 MiB pseudo-text buffer (eight passes): ASCII lower-casing into a second buffer, counting runs
// of equal bytes (a run-length scan) and a table-driven CRC-32 (IEEE, reflected) of the lower-cased text.
// Kind: bytes (byte-wise loops: two vectorizable, one serial table-lookup chain).
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

static uint32_t crc_table[256];
static void make_crc_table() {
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

uint32_t crc32(const unsigned char* p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; ++i) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

void to_lower(const unsigned char* in, unsigned char* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = in[i];
        out[i] = (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c;
    }
}

size_t count_runs(const unsigned char* p, size_t n) {
    if (n == 0) return 0;
    size_t runs = 1;
    for (size_t i = 1; i < n; ++i) runs += p[i] != p[i - 1];
    return runs;
}

int main() {
    const size_t n = size_t(1) << 23;
    const int passes = 8;
    std::vector<unsigned char> text(n), lower(n);
    uint64_t seed = 10;
    const char alphabet[] = "aaaeeiioouu  bcdfghlmnprstAEIOTSN.,\n";
    for (size_t i = 0; i < n;) {  // words with occasional repeated letters
        const uint64_t r = splitmix64(seed);
        const unsigned char c = static_cast<unsigned char>(alphabet[r % (sizeof(alphabet) - 1)]);
        const size_t rep = 1 + ((r >> 20) % 8 == 0 ? (r >> 24) % 4 : 0);
        for (size_t k = 0; k < rep && i < n; ++k) text[i++] = c;
    }
    make_crc_table();

    uint64_t checksum = 0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) {
        text[p] = static_cast<unsigned char>('A' + p);
        to_lower(text.data(), lower.data(), n);
        checksum = checksum * 1000003u + count_runs(lower.data(), n);
        checksum = checksum * 1000003u + crc32(lower.data(), n);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
