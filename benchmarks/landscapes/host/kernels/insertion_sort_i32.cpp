// Many small arrays (48 ints each) sorted with insertion sort, then each looked up with a hand-written
// binary search for a few keys: data-dependent, unpredictable branches. Kind: branchy (integer control flow).
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

void insertion_sort(int32_t* a, int n) {
    for (int i = 1; i < n; ++i) {
        const int32_t key = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > key) {
            a[j + 1] = a[j];
            --j;
        }
        a[j + 1] = key;
    }
}

int lower_bound(const int32_t* a, int n, int32_t key) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int main() {
    const int len = 48, count = 160000, probes = 8;
    std::vector<int32_t> data(static_cast<size_t>(len) * count), keys(static_cast<size_t>(probes) * count);
    uint64_t seed = 8;
    for (auto& v : data) v = static_cast<int32_t>(splitmix64(seed) % 100000);
    for (auto& v : keys) v = static_cast<int32_t>(splitmix64(seed) % 100000);

    uint64_t checksum = 0;
    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < count; ++c) {
        int32_t* a = data.data() + static_cast<size_t>(c) * len;
        insertion_sort(a, len);
        for (int p = 0; p < probes; ++p) checksum += lower_bound(a, len, keys[static_cast<size_t>(c) * probes + p]);
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    for (size_t i = 0; i < data.size(); ++i) checksum = checksum * 31 + static_cast<uint32_t>(data[i]);
    checksum &= (1ULL << 53) - 1;
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", static_cast<double>(checksum));
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
