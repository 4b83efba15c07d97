// ChaCha20 stream cipher (RFC 8439 block function, written plainly over uint32_t state[16]): encrypts a 4 MiB
// buffer in place with 64-byte keystream blocks, 23 passes with a new nonce each; 32-bit adds,
// xors and rotates (written as shifts and an or, which gcc turns into rotates) with four independent
// quarter-rounds per half round (SLP-vectorizable; AVX-512 has a vector rotate). The ciphertext feeds the
// checksum. Kind: cipher (integer add-rotate-xor rounds).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

static uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static inline void quarter_round(uint32_t* x, int a, int b, int c, int d) {
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
}

static void chacha20_block(const uint32_t in[16], uint32_t out[16]) {
    uint32_t x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[i];
    for (int r = 0; r < 10; ++r) {
        quarter_round(x, 0, 4, 8, 12);
        quarter_round(x, 1, 5, 9, 13);
        quarter_round(x, 2, 6, 10, 14);
        quarter_round(x, 3, 7, 11, 15);
        quarter_round(x, 0, 5, 10, 15);
        quarter_round(x, 1, 6, 11, 12);
        quarter_round(x, 2, 7, 8, 13);
        quarter_round(x, 3, 4, 9, 14);
    }
    for (int i = 0; i < 16; ++i) out[i] = x[i] + in[i];
}

// data (n32 words, a multiple of 16) ^= the keystream of (key, nonce) from block counter 1
void chacha20_xor(uint32_t* data, size_t n32, const uint32_t key[8], const uint32_t nonce[3]) {
    uint32_t state[16] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    for (int i = 0; i < 8; ++i) state[4 + i] = key[i];
    state[12] = 1;
    for (int i = 0; i < 3; ++i) state[13 + i] = nonce[i];
    uint32_t ks[16];
    for (size_t b = 0; b < n32; b += 16) {
        chacha20_block(state, ks);
        for (int i = 0; i < 16; ++i) data[b + i] ^= ks[i];
        ++state[12];
    }
}

int main() {
    const size_t n32 = size_t(1) << 20;  // 4 MiB
    const int passes = 23;
    std::vector<uint32_t> data(n32);
    uint64_t seed = 24;
    for (auto& v : data) v = static_cast<uint32_t>(splitmix64(seed));
    uint32_t key[8], nonce[3];
    for (auto& k : key) k = static_cast<uint32_t>(splitmix64(seed));

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) {
        nonce[0] = 0x09000000u;
        nonce[1] = 0x4a000000u + static_cast<uint32_t>(p);
        nonce[2] = 0;
        chacha20_xor(data.data(), n32, key, nonce);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    uint64_t checksum = 0;
    for (size_t i = 0; i < n32; ++i) checksum = checksum * 1000003u + data[i];
    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
