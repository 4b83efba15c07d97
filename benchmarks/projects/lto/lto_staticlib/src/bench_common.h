// Command line, input generator and sample check shared by bench_a.cpp and bench_b.cpp.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bench {

constexpr unsigned long long kMaxN = 1ull << 30;
constexpr unsigned long long kMaxReps = 100000;

struct Options {
  unsigned long long n;
  int reps = 20;
};

inline void usage(const char* prog, unsigned long long default_n) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--reps R]\n"
               "  --n N     number of elements (default %llu, 1..%llu)\n"
               "  --reps R  timed repetitions (default 20, 1..%llu)\n",
               prog, default_n, kMaxN, kMaxReps);
}

// Parses a decimal integer in [lo, hi]; false on any junk.
inline bool parse_count(const char* s, unsigned long long lo, unsigned long long hi,
                        unsigned long long* out) {
  if (*s < '0' || *s > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Parses "--n N" and "--reps R"; prints usage and exits 2 on bad arguments.
inline Options parse_args(int argc, char** argv, unsigned long long default_n) {
  Options o;
  o.n = default_n;
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
      usage(argv[0], default_n);
      std::exit(0);
    } else {
      usage(argv[0], default_n);
      std::exit(2);
    }
  }
  return o;
}

// xorshift64* generator for deterministic inputs.
struct Rng {
  std::uint64_t s;
  float uniform(float lo, float hi) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const std::uint64_t r = s * 0x2545F4914F6CDD1Dull;
    return lo + (hi - lo) * static_cast<float>(r >> 40) * 0x1p-24f;
  }
};

// Compares got against want with |got - want| <= atol + rtol * |want|; counts failures
// and prints the first few to stderr.
struct SampleCheck {
  double atol, rtol;
  std::size_t checked = 0, bad = 0;
  double max_err = 0.0;
  void operator()(std::size_t i, double got, double want) {
    const double err = std::fabs(got - want);
    ++checked;
    if (err > max_err) max_err = err;
    if (!(err <= atol + rtol * std::fabs(want))) {
      if (bad < 5)
        std::fprintf(stderr, "mismatch at %zu: gpu %.7g ref %.7g\n", i, got, want);
      ++bad;
    }
  }
};

// Prints the time, checksum and PASS/FAIL lines; returns the exit status.
inline int report(double ms, double checksum, const SampleCheck& check) {
  std::printf("time_ms=%.6f\n", ms);
  std::printf("checksum=%.6e\n", checksum);
  if (check.bad != 0) {
    std::printf("FAIL\n");
    std::fprintf(stderr, "%zu of %zu values out of tolerance, max abs err %.3g\n", check.bad,
                 check.checked, check.max_err);
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}

}  // namespace bench
