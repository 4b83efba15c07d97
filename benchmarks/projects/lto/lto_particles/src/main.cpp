// particles: integrates n particles on the GPU (gpu_integrate in integrate.cu), checks a
// sample against the CPU reference (ref.cpp) and prints time_ms, checksum, PASS/FAIL.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "particles.h"

namespace {

constexpr unsigned long long kDefaultN = 1ull << 23;  // 8M particles
constexpr unsigned long long kMaxN = 1ull << 28;
constexpr unsigned long long kMaxReps = 100000;
constexpr std::size_t kSamples = 4096;                // particles checked on the CPU
constexpr double kAbsTol = 2e-3, kRelTol = 2e-3;

struct Options {
  unsigned long long n = kDefaultN;
  int reps = 20;
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--reps R]\n"
               "  --n N     number of particles (default %llu, 1..%llu)\n"
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

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  const std::size_t n = opt.n;

  std::vector<float> pos(4 * n), vel(4 * n), pos_out(4 * n), vel_out(4 * n);
  Rng rng{0x9E3779B97F4A7C15ull};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < 3; ++d) pos[4 * i + d] = rng.uniform(-2.0f, 2.0f);
    pos[4 * i + 3] = rng.uniform(0.5f, 2.0f);  // inverse mass
    for (std::size_t d = 0; d < 3; ++d) vel[4 * i + d] = rng.uniform(-1.0f, 1.0f);
    vel[4 * i + 3] = 0.0f;
  }

  const double ms = gpu_integrate(pos.data(), vel.data(), pos_out.data(), vel_out.data(),
                                  n, opt.reps);

  double checksum = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    checksum += static_cast<double>(pos_out[4 * i]) + pos_out[4 * i + 1] + pos_out[4 * i + 2];

  // Check evenly spaced particles (all of them when n <= kSamples).
  const std::size_t samples = n < kSamples ? n : kSamples;
  std::size_t bad = 0;
  double max_err = 0.0;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = samples > 1 ? k * (n - 1) / (samples - 1) : 0;
    double rp[3], rv[3];
    ref_integrate(&pos[4 * i], &vel[4 * i], rp, rv);
    for (std::size_t d = 0; d < 3; ++d) {
      const double got[2] = {pos_out[4 * i + d], vel_out[4 * i + d]};
      const double want[2] = {rp[d], rv[d]};
      for (int q = 0; q < 2; ++q) {
        const double err = std::fabs(got[q] - want[q]);
        if (err > max_err) max_err = err;
        if (!(err <= kAbsTol + kRelTol * std::fabs(want[q]))) {
          if (bad < 5)
            std::fprintf(stderr, "mismatch particle %zu %s[%zu]: gpu %.7g ref %.7g\n", i,
                         q ? "vel" : "pos", d, got[q], want[q]);
          ++bad;
        }
      }
    }
  }

  std::printf("time_ms=%.6f\n", ms);
  std::printf("checksum=%.6e\n", checksum);
  if (bad != 0) {
    std::printf("FAIL\n");
    std::fprintf(stderr, "%zu of %zu values out of tolerance, max abs err %.3g\n", bad,
                 samples * 6, max_err);
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
