// hashbench: runs the hash-chain and Monte Carlo kernels (gpu_hashbench in kernels.cu),
// checks a sample against the CPU reference (ref.cpp, compared by check.cpp) and prints
// time_ms, checksum, PASS/FAIL.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.h"
#include "hashbench.h"

namespace {

constexpr unsigned long long kDefaultN = 1ull << 24;  // 16M threads (streams)
constexpr unsigned long long kMaxN = 1ull << 30;
constexpr unsigned long long kMaxReps = 100000;
constexpr std::size_t kSamples = 4096;                // threads checked on the CPU
constexpr std::uint32_t kSeed = 0x2545F491u;

struct Options {
  unsigned long long n = kDefaultN;
  int reps = 20;
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--reps R]\n"
               "  --n N     number of threads/RNG streams (default %llu, 1..%llu)\n"
               "  --reps R  timed repetitions (default 20, 1..%llu)\n",
               prog, kDefaultN, kMaxN, kMaxReps);
}

// Parses a decimal integer in [lo, hi]; false on any junk.
bool parse_count(const char* s, unsigned long long lo, unsigned long long hi,
                 unsigned long long* out) {
  if (*s < '0' || *s > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    unsigned long long v = 0;
    if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc &&
        parse_count(argv[i + 1], 1, kMaxN, &v)) {
      o.n = v;
      ++i;
    } else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc &&
               parse_count(argv[i + 1], 1, kMaxReps, &v)) {
      o.reps = static_cast<int>(v);
      ++i;
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(argv[0]);
      std::exit(0);
    } else {
      usage(argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  const std::size_t n = opt.n;

  std::vector<std::uint32_t> digest(n), hits(n);
  std::vector<float> mean(n);
  const double ms = gpu_hashbench(n, kSeed, digest.data(), hits.data(), mean.data(), opt.reps);

  // Order-dependent fold of the digests, total hits and the mean of the means.
  std::uint32_t fold = 2166136261u;
  unsigned long long total_hits = 0;
  double mean_sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    fold = (fold ^ digest[i]) * 16777619u;
    total_hits += hits[i];
    mean_sum += mean[i];
  }

  // Check evenly spaced threads (all of them when n <= kSamples).
  const std::size_t samples = n < kSamples ? n : kSamples;
  Checker check;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = samples > 1 ? k * (n - 1) / (samples - 1) : 0;
    std::uint32_t ref_hits = 0;
    double ref_mean = 0.0;
    ref_monte_carlo(i, kSeed, &ref_hits, &ref_mean);
    check.exact("digest", i, digest[i], ref_digest(i, kSeed));
    check.exact("hits", i, hits[i], ref_hits);
    check.close("mean", i, mean[i], ref_mean, 1e-4, 1e-4);
  }

  std::printf("time_ms=%.6f\n", ms);
  std::printf("checksum=0x%08x hits=%llu mean=%.6f\n", fold, total_hits,
              mean_sum / static_cast<double>(n));
  if (!check.passed()) {
    std::printf("FAIL\n");
    check.summary();
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
