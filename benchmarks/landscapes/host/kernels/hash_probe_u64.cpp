// Open-addressing hash table (linear probing, 2^20 slots of uint64 key + uint32 value, multiplicative hash):
// in each of 5 rounds, clear it, insert 600000 random keys (a repeated key adds to its value) and look up
// 1.2 M keys, half of them present; the found values and miss counts feed the checksum. Probe loops with
// data-dependent exits over a 12 MiB table (cache misses). Kind: hash table (integer, branchy, random
// memory access).
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

constexpr int LOG_SLOTS = 20;
constexpr uint64_t EMPTY = 0;  // keys are never 0

struct Table {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> values;
};

static inline size_t slot_of(uint64_t key) {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> (64 - LOG_SLOTS));
}

void insert_all(Table& t, const uint64_t* keys, size_t n) {
    const size_t mask = (size_t(1) << LOG_SLOTS) - 1;
    for (size_t i = 0; i < n; ++i) {
        size_t s = slot_of(keys[i]);
        while (t.keys[s] != EMPTY && t.keys[s] != keys[i]) s = (s + 1) & mask;
        t.keys[s] = keys[i];
        t.values[s] += static_cast<uint32_t>(i) | 1u;
    }
}

uint64_t lookup_all(const Table& t, const uint64_t* keys, size_t n, uint64_t& misses) {
    const size_t mask = (size_t(1) << LOG_SLOTS) - 1;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t s = slot_of(keys[i]);
        while (true) {
            const uint64_t k = t.keys[s];
            if (k == keys[i]) {
                sum += t.values[s];
                break;
            }
            if (k == EMPTY) {
                ++misses;
                break;
            }
            s = (s + 1) & mask;
        }
    }
    return sum;
}

int main() {
    const size_t n_insert = 600000, n_lookup = 1200000;
    const int rounds = 5;
    uint64_t seed = 20;
    // key universe: inserted keys are drawn from 2^20 values, so some repeat; lookups mix present and absent
    std::vector<uint64_t> universe(size_t(1) << 20);
    for (auto& k : universe) k = splitmix64(seed) | 1;
    std::vector<uint64_t> ins(n_insert * rounds), look(n_lookup * rounds);
    for (auto& k : ins) k = universe[splitmix64(seed) & ((size_t(1) << 20) - 1)];
    for (size_t i = 0; i < look.size(); ++i)
        look[i] = (i % 2 == 0) ? ins[splitmix64(seed) % ins.size()] : (splitmix64(seed) | 1);
    Table t{std::vector<uint64_t>(size_t(1) << LOG_SLOTS), std::vector<uint32_t>(size_t(1) << LOG_SLOTS)};

    uint64_t checksum = 0, misses = 0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) {
        for (auto& k : t.keys) k = EMPTY;
        for (auto& v : t.values) v = 0;
        insert_all(t, ins.data() + r * n_insert, n_insert);
        checksum = checksum * 1000003u + lookup_all(t, look.data() + r * n_lookup, n_lookup, misses);
        checksum = checksum * 1000003u + misses;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
