// Naive substring search: occurrences of 12 patterns (8 to 30 bytes) in a 4.25 MiB DNA-like text over a
// 4-letter alphabet with planted copies, by comparing at every position byte by byte until the first
// mismatch (the text's small alphabet makes partial matches common). Data-dependent early exits; the counts
// and the first and last match positions of each pattern feed the checksum. Kind: string search (branchy
// byte comparisons).
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

struct Matches {
    uint64_t count;
    int64_t first, last;
};

Matches find_all(const unsigned char* text, size_t n, const unsigned char* pat, size_t m) {
    Matches r{0, -1, -1};
    for (size_t i = 0; i + m <= n; ++i) {
        size_t j = 0;
        while (j < m && text[i + j] == pat[j]) ++j;
        if (j == m) {
            if (r.count == 0) r.first = static_cast<int64_t>(i);
            r.last = static_cast<int64_t>(i);
            ++r.count;
        }
    }
    return r;
}

int main() {
    const size_t n = size_t(17) << 18;
    const int npat = 12;
    const char alphabet[4] = {'a', 'c', 'g', 't'};
    std::vector<unsigned char> text(n);
    uint64_t seed = 19;
    for (auto& c : text) c = static_cast<unsigned char>(alphabet[splitmix64(seed) & 3]);
    std::vector<std::vector<unsigned char>> pats(npat);
    for (int p = 0; p < npat; ++p) {
        pats[p].resize(8 + 2 * p);
        for (auto& c : pats[p]) c = static_cast<unsigned char>(alphabet[splitmix64(seed) & 3]);
        for (int k = 0; k < 40; ++k) {  // planted copies, some with a changed last byte
            const size_t at = splitmix64(seed) % (n - pats[p].size());
            for (size_t j = 0; j < pats[p].size(); ++j) text[at + j] = pats[p][j];
            if (k % 3 == 0) text[at + pats[p].size() - 1] ^= 6;
        }
    }

    uint64_t checksum = 0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < npat; ++p) {
        const Matches r = find_all(text.data(), n, pats[p].data(), pats[p].size());
        checksum = checksum * 1000003u + r.count;
        checksum = checksum * 1000003u + static_cast<uint64_t>(r.first + 1);
        checksum = checksum * 1000003u + static_cast<uint64_t>(r.last + 1);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
