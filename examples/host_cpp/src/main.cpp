// host_kernels: two single-threaded float kernels whose speed depends strongly on
// the gcc optimization flags, each self-checked against a double-precision reference.
//
//   1. all-pairs softened gravitational accelerations of n bodies (SoA, float,
//      1.0f/sqrtf, the inner j-loop is a float reduction)
//   2. C = A * B^T with m = max(8, n/8) rows and K = 128 columns (every element is
//      a float dot product, i.e. again a reduction)
//
// Float reductions can only be vectorized when gcc may reassociate (-ffast-math /
// -fassociative-math), 1.0f/sqrtf only turns into rsqrt + Newton-Raphson under
// -ffast-math, and -march=native / -O3 / -funroll-loops change the code further.
//
// Output: one line "time_ms=<median ms of both kernels over --reps runs>", then
// "PASS" or "FAIL" (exit code 1 on FAIL, 2 on bad options).

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

namespace {

constexpr float kSoftening2 = 1e-3f;  // softening^2, keeps r^2 > 0
constexpr int kK = 128;               // inner (reduction) length of the matrix product
constexpr double kTol = 1e-3;         // relative tolerance (fast-math results must pass)
constexpr int kSampleBodies = 64;     // bodies checked against the double reference

struct Options {
  long long n = 1024;
  long long reps = 7;
  unsigned long long seed = 12345;
};

void usage(const char* prog) {
  std::fprintf(stderr, "usage: %s [--n N (>=2)] [--reps R (>=1)] [--seed S]\n", prog);
}

bool parse_ll(const char* s, long long& out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: missing value for %s\n", a.c_str());
      return false;
    }
    long long v = 0;
    if (!parse_ll(argv[i + 1], v)) {
      std::fprintf(stderr, "error: bad integer '%s' for %s\n", argv[i + 1], a.c_str());
      return false;
    }
    ++i;
    if (a == "--n") {
      if (v < 2 || v > (1LL << 20)) {
        std::fprintf(stderr, "error: --n must be in [2, 1048576]\n");
        return false;
      }
      o.n = v;
    } else if (a == "--reps") {
      if (v < 1 || v > 100000) {
        std::fprintf(stderr, "error: --reps must be in [1, 100000]\n");
        return false;
      }
      o.reps = v;
    } else if (a == "--seed") {
      if (v < 0) {
        std::fprintf(stderr, "error: --seed must be >= 0\n");
        return false;
      }
      o.seed = static_cast<unsigned long long>(v);
    } else {
      std::fprintf(stderr, "error: unknown option %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

// splitmix64: deterministic across compilers and standard libraries.
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // uniform in [lo, hi)
  float uniform(float lo, float hi) {
    double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(lo + (hi - lo) * u);
  }
};

// ---------------------------------------------------------------- kernels (timed)

NOINLINE void nbody_accel(int n, const float* px, const float* py, const float* pz,
                          const float* mass, float* ax, float* ay, float* az) {
  for (int i = 0; i < n; ++i) {
    const float xi = px[i], yi = py[i], zi = pz[i];
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (int j = 0; j < n; ++j) {
      const float dx = px[j] - xi;
      const float dy = py[j] - yi;
      const float dz = pz[j] - zi;
      const float r2 = dx * dx + dy * dy + dz * dz + kSoftening2;
      const float inv = 1.0f / std::sqrt(r2);
      const float s = mass[j] * inv * inv * inv;
      sx += dx * s;
      sy += dy * s;
      sz += dz * s;
    }
    ax[i] = sx;
    ay[i] = sy;
    az[i] = sz;
  }
}

// C[i*m + j] = sum_k A[i*K + k] * B[j*K + k]
NOINLINE void matmul_abt(int m, int k, const float* a, const float* b, float* c) {
  for (int i = 0; i < m; ++i) {
    const float* ai = a + static_cast<std::size_t>(i) * k;
    for (int j = 0; j < m; ++j) {
      const float* bj = b + static_cast<std::size_t>(j) * k;
      float acc = 0.0f;
      for (int p = 0; p < k; ++p) acc += ai[p] * bj[p];
      c[static_cast<std::size_t>(i) * m + j] = acc;
    }
  }
}

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, opt)) {
    usage(argv[0]);
    return 2;
  }
  const int n = static_cast<int>(opt.n);
  const int m = std::max(8, n / 8);
  const int reps = static_cast<int>(opt.reps);

  // ---------------------------------------------------------------- inputs
  Rng rng(opt.seed);
  std::vector<float> px(n), py(n), pz(n), mass(n), ax(n), ay(n), az(n);
  for (int i = 0; i < n; ++i) {
    px[i] = rng.uniform(-1.0f, 1.0f);
    py[i] = rng.uniform(-1.0f, 1.0f);
    pz[i] = rng.uniform(-1.0f, 1.0f);
    mass[i] = rng.uniform(0.5f, 1.5f);
  }
  std::vector<float> a(static_cast<std::size_t>(m) * kK), b(static_cast<std::size_t>(m) * kK),
      c(static_cast<std::size_t>(m) * m);
  for (auto& v : a) v = rng.uniform(0.1f, 1.1f);
  for (auto& v : b) v = rng.uniform(0.1f, 1.1f);

  // ---------------------------------------------------------------- timing
  // one untimed warm-up, then the median of `reps` timed runs of both kernels
  nbody_accel(n, px.data(), py.data(), pz.data(), mass.data(), ax.data(), ay.data(), az.data());
  matmul_abt(m, kK, a.data(), b.data(), c.data());
  std::vector<double> times;
  times.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_ms();
    nbody_accel(n, px.data(), py.data(), pz.data(), mass.data(), ax.data(), ay.data(), az.data());
    matmul_abt(m, kK, a.data(), b.data(), c.data());
    times.push_back(now_ms() - t0);
  }
  std::sort(times.begin(), times.end());
  const double median =
      (reps % 2) ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);

  // ---------------------------------------------------------------- verification
  // n-body: norm-wise relative error of the acceleration vector for a sample of bodies;
  // the denominator is floored at 1e-2 * sum_j |F_ij| so that a body whose forces
  // nearly cancel does not turn ordinary float rounding into a failure.
  double max_err_nbody = 0.0;
  bool ok = true;
  const int samples = std::min(n, kSampleBodies);
  for (int s = 0; s < samples; ++s) {
    const int i = static_cast<int>((static_cast<long long>(s) * n) / samples);
    double rx = 0.0, ry = 0.0, rz = 0.0, scale = 0.0;
    for (int j = 0; j < n; ++j) {
      const double dx = static_cast<double>(px[j]) - px[i];
      const double dy = static_cast<double>(py[j]) - py[i];
      const double dz = static_cast<double>(pz[j]) - pz[i];
      const double r2 = dx * dx + dy * dy + dz * dz + static_cast<double>(kSoftening2);
      const double inv = 1.0 / std::sqrt(r2);
      const double f = static_cast<double>(mass[j]) * inv * inv * inv;
      rx += dx * f;
      ry += dy * f;
      rz += dz * f;
      scale += f * std::sqrt(dx * dx + dy * dy + dz * dz);
    }
    const double ex = ax[i] - rx, ey = ay[i] - ry, ez = az[i] - rz;
    const double diff = std::sqrt(ex * ex + ey * ey + ez * ez);
    const double denom = std::max(std::sqrt(rx * rx + ry * ry + rz * rz), 1e-2 * scale);
    const double err = denom > 0.0 ? diff / denom : diff;
    if (!(err <= kTol)) ok = false;  // also catches NaN
    if (!(err <= max_err_nbody)) max_err_nbody = err;
  }
  // matrix product: inputs are positive, so every element is well conditioned
  double max_err_mm = 0.0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < m; ++j) {
      double ref = 0.0;
      for (int p = 0; p < kK; ++p)
        ref += static_cast<double>(a[static_cast<std::size_t>(i) * kK + p]) *
               static_cast<double>(b[static_cast<std::size_t>(j) * kK + p]);
      const double err = std::fabs(c[static_cast<std::size_t>(i) * m + j] - ref) / std::fabs(ref);
      if (!(err <= kTol)) ok = false;
      if (!(err <= max_err_mm)) max_err_mm = err;
    }
  }

  std::printf("n=%d m=%d k=%d reps=%d seed=%llu\n", n, m, kK, reps, opt.seed);
  std::printf("max_rel_err_nbody=%.3e max_rel_err_matmul=%.3e tol=%.1e\n", max_err_nbody,
              max_err_mm, kTol);
  std::printf("time_ms=%.6f\n", median);
  std::puts(ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
