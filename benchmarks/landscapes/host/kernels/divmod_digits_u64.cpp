// Integer division, two ways: per pair of 64-bit values, the sum of the base-10 digits of each (division and
// modulo by the constant 10, which gcc turns into a multiply-high and shifts) and their greatest common
// divisor by Euclid's algorithm (a chain of hardware divisions by a variable divisor, a data-dependent
// number of steps). 1.25 Mi pairs below 2^48; the digit sums and gcds feed the checksum. Kind: integer
// division (constant and variable divisors, serial div latency).
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

static inline uint64_t digit_sum(uint64_t v) {
    uint64_t s = 0;
    while (v != 0) {
        s += v % 10;
        v /= 10;
    }
    return s;
}

static inline uint64_t gcd(uint64_t a, uint64_t b) {
    while (b != 0) {
        const uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// out[i] = gcd(a[i], b[i]) * 1024 + digit sums of a[i] and b[i]
void divmod(const uint64_t* a, const uint64_t* b, uint64_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = gcd(a[i], b[i]) * 1024 + digit_sum(a[i]) + digit_sum(b[i]);
}

int main() {
    const size_t n = size_t(5) << 18;
    std::vector<uint64_t> a(n), b(n), out(n);
    uint64_t seed = 25;
    for (size_t i = 0; i < n; ++i) {  // a shared factor now and then, so that the gcds are not all 1
        const uint64_t f = 1 + splitmix64(seed) % 1000;
        a[i] = (splitmix64(seed) >> 16) / f * f;
        b[i] = (splitmix64(seed) >> 16) / f * f + ((i % 4 == 0) ? 1 : 0);
        if (a[i] == 0) a[i] = 1;
    }

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    divmod(a.data(), b.data(), out.data(), n);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    uint64_t checksum = 0;
    for (size_t i = 0; i < n; ++i) checksum = checksum * 1000003u + out[i];
    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
