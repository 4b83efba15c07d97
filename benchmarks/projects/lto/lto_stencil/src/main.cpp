// stencilbench: applies the 11x11 stencil on the GPU (gpu_stencil in stencil.cu), checks a
// lattice of cells (including edges and corners) against the CPU reference (ref.cpp) and
// prints time_ms, checksum, PASS/FAIL.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "stencil.h"

namespace {

constexpr unsigned long long kDefaultN = 8192;   // 8192 x 8192 grid
constexpr unsigned long long kMaxN = 32768;
constexpr unsigned long long kMaxReps = 100000;
constexpr int kLattice = 64;                      // 64 x 64 sampled cells checked on the CPU
constexpr double kAbsTol = 1e-4, kRelTol = 1e-4;

struct Options {
  unsigned long long n = kDefaultN;
  int reps = 20;
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--reps R]\n"
               "  --n N     grid side, n x n cells (default %llu, 1..%llu)\n"
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
  const int n = static_cast<int>(opt.n);
  const std::size_t side = opt.n, cells = side * side;

  std::vector<float> u(cells), kappa(cells), out(cells), wx(kWidth), wy(kWidth);
  Rng rng{0x9E3779B97F4A7C15ull};
  for (float& v : u) v = rng.uniform(-1.0f, 1.0f);
  for (float& v : kappa) v = rng.uniform(0.5f, 2.0f);
  make_weights(wx.data(), wy.data());

  const double ms =
      gpu_stencil(u.data(), kappa.data(), out.data(), n, wx.data(), wy.data(), opt.reps);

  double checksum = 0.0;
  for (float v : out) checksum += v;

  // Check a kLattice x kLattice lattice spanning the grid, corners and edges included.
  std::size_t checked = 0, bad = 0;
  double max_err = 0.0;
  for (int ky = 0; ky < kLattice; ++ky) {
    for (int kx = 0; kx < kLattice; ++kx) {
      const int y = static_cast<int>(static_cast<long long>(ky) * (n - 1) / (kLattice - 1));
      const int x = static_cast<int>(static_cast<long long>(kx) * (n - 1) / (kLattice - 1));
      const double want =
          ref_stencil_point(u.data(), kappa.data(), n, wx.data(), wy.data(), x, y);
      const double got = out[static_cast<std::size_t>(y) * side + static_cast<std::size_t>(x)];
      const double err = std::fabs(got - want);
      ++checked;
      if (err > max_err) max_err = err;
      if (!(err <= kAbsTol + kRelTol * std::fabs(want))) {
        if (bad < 5)
          std::fprintf(stderr, "mismatch at (%d, %d): gpu %.7g ref %.7g\n", x, y, got, want);
        ++bad;
      }
    }
  }

  std::printf("time_ms=%.6f\n", ms);
  std::printf("checksum=%.6e\n", checksum);
  if (bad != 0) {
    std::printf("FAIL\n");
    std::fprintf(stderr, "%zu of %zu cells out of tolerance, max abs err %.3g\n", bad, checked,
                 max_err);
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
