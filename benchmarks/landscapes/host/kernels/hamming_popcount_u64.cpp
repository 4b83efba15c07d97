// Near-duplicate search over 64-bit simhash-style fingerprints: for each query, the Hamming distance
// (popcount of the xor) to every database fingerprint; counts matches within distance 12 and sums the
// distances. Fingerprints are made by a 64-bit mixing hash. Kind: bitops (integer popcount, instruction-set
// sensitive).
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
static uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }
static uint64_t mix(uint64_t h) {  // a murmur-style finalizer with a rotation
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h = rotl(h, 29);
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

struct Result {
    uint64_t near = 0, total = 0;
};

Result search(const uint64_t* queries, int nq, const uint64_t* db, int ndb, int radius) {
    Result r;
    for (int q = 0; q < nq; ++q) {
        const uint64_t f = queries[q];
        uint64_t near = 0, total = 0;
        for (int j = 0; j < ndb; ++j) {
            const int d = __builtin_popcountll(f ^ db[j]);
            total += d;
            near += d <= radius;
        }
        r.near += near;
        r.total += total;
    }
    return r;
}

int main() {
    const int ndb = 1 << 14, nq = 4096;
    std::vector<uint64_t> db(ndb), queries(nq);
    uint64_t seed = 7;
    for (auto& v : db) v = mix(splitmix64(seed));
    for (int q = 0; q < nq; ++q) {  // half of the queries are near copies of database entries
        const uint64_t base = (q & 1) ? db[splitmix64(seed) % ndb] : mix(splitmix64(seed));
        queries[q] = base ^ (1ULL << (splitmix64(seed) & 63)) ^ (1ULL << (splitmix64(seed) & 63));
    }

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    const Result r = search(queries.data(), nq, db.data(), ndb, 12);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    const uint64_t checksum = (r.near * 1000003ULL + r.total) & ((1ULL << 53) - 1);
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
