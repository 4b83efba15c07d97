// stencil: benchmark and self-check of the stencil_kernels library.
//
// --iters sweeps of a 5-point weighted Jacobi stencil over an n x n float grid
// (memory bound), ping-ponging two device buffers, timed with cudaEvents: one
// warm-up run, then the median over --reps runs. Every run starts from the same
// untouched input grid, so all runs do identical work.
//
// Verification: (1) a sample of cells (random ones plus corners, edges and cells
// next to the boundary) against a CPU double-precision reference with relative
// tolerance 1e-4 (each sample only needs the input patch within distance `iters`);
// (2) every cell of the final grid is finite and lies within [min, max] of the input
// (the stencil is a convex average, so the maximum principle must hold).
//
// Output: one line "time_ms=<median ms>", then "PASS" or "FAIL" (exit code 1 on
// FAIL or CUDA error, 2 on bad options).

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "stencil.h"

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),    \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                     \
      std::puts("FAIL");                                                              \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

constexpr double kTol = 1e-4;
constexpr int kRandomSamples = 256;

struct Options {
  long long n = 4096;
  long long reps = 20;
  long long iters = 20;
  unsigned long long seed = 12345;
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N (3..8192)] [--reps R (>=1)] [--iters I (1..1000)] [--seed S]\n",
               prog);
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
      if (v < 3 || v > 8192) {  // 3 grids of 8192^2 floats = 768 MiB at most
        std::fprintf(stderr, "error: --n must be in [3, 8192]\n");
        return false;
      }
      o.n = v;
    } else if (a == "--reps") {
      if (v < 1 || v > 100000) {
        std::fprintf(stderr, "error: --reps must be in [1, 100000]\n");
        return false;
      }
      o.reps = v;
    } else if (a == "--iters") {
      if (v < 1 || v > 1000) {
        std::fprintf(stderr, "error: --iters must be in [1, 1000]\n");
        return false;
      }
      o.iters = v;
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
  float uniform(float lo, float hi) {  // [lo, hi)
    double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(lo + (hi - lo) * u);
  }
  int below(int k) { return static_cast<int>(next() % static_cast<std::uint64_t>(k)); }
};

// Double-precision value of cell (ci, cj) after `iters` sweeps. Only the input patch
// within Chebyshev distance iters+1 matters: cells on the patch rim that are not grid
// boundary cells are left stale, and staleness moves inward one cell per sweep, so
// the centre (iters+1 cells from the rim) is exact.
double reference_cell(const std::vector<float>& init, int n, int iters, int ci, int cj) {
  const int r = iters + 1;
  const int i0 = std::max(0, ci - r), i1 = std::min(n - 1, ci + r);
  const int j0 = std::max(0, cj - r), j1 = std::min(n - 1, cj + r);
  const int h = i1 - i0 + 1, w = j1 - j0 + 1;
  std::vector<double> a(static_cast<size_t>(h) * w), b;
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j)
      a[static_cast<size_t>(i) * w + j] = init[static_cast<size_t>(i0 + i) * n + (j0 + j)];
  b = a;
  const double cw = stencil::kCenterWeight, nw = stencil::kNeighborWeight;
  for (int it = 0; it < iters; ++it) {
    for (int i = 1; i < h - 1; ++i) {
      const int gi = i0 + i;
      if (gi == 0 || gi == n - 1) continue;
      for (int j = 1; j < w - 1; ++j) {
        const int gj = j0 + j;
        if (gj == 0 || gj == n - 1) continue;
        const size_t k = static_cast<size_t>(i) * w + j;
        b[k] = cw * a[k] + nw * (a[k - w] + a[k + w] + a[k - 1] + a[k + 1]);
      }
    }
    std::swap(a, b);  // rim / boundary cells are identical in both buffers
  }
  return a[static_cast<size_t>(ci - i0) * w + (cj - j0)];
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, opt)) {
    usage(argv[0]);
    return 2;
  }
  const int n = static_cast<int>(opt.n);
  const int reps = static_cast<int>(opt.reps);
  const int iters = static_cast<int>(opt.iters);

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

  // ---------------------------------------------------------------- inputs
  const size_t cells = static_cast<size_t>(n) * n;
  const size_t bytes = cells * sizeof(float);
  Rng rng(opt.seed);
  std::vector<float> h_init(cells);
  float in_min = 2.f, in_max = -1.f;
  for (auto& v : h_init) {
    v = rng.uniform(0.5f, 1.5f);
    in_min = std::min(in_min, v);
    in_max = std::max(in_max, v);
  }

  float *d_init = nullptr, *d_a = nullptr, *d_b = nullptr;
  CUDA_CHECK(cudaMalloc(&d_init, bytes));
  CUDA_CHECK(cudaMalloc(&d_a, bytes));
  CUDA_CHECK(cudaMalloc(&d_b, bytes));
  CUDA_CHECK(cudaMemcpy(d_init, h_init.data(), bytes, cudaMemcpyHostToDevice));
  // NaN pattern: cells the kernel fails to write make the check fail
  CUDA_CHECK(cudaMemset(d_a, 0xFF, bytes));
  CUDA_CHECK(cudaMemset(d_b, 0xFF, bytes));

  // ---------------------------------------------------------------- timing
  const float* d_result = nullptr;
  CUDA_CHECK(stencil::jacobi_run(d_init, d_a, d_b, n, iters, &d_result));  // warm-up
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  times.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(stencil::jacobi_run(d_init, d_a, d_b, n, iters, &d_result));
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  std::sort(times.begin(), times.end());
  const double median =
      (reps % 2) ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);

  std::vector<float> h_out(cells);
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_result, bytes, cudaMemcpyDeviceToHost));

  // ---------------------------------------------------------------- verification
  bool ok = true;
  // (1) every cell finite and inside the input range (tiny slack for rounding)
  const float lo = in_min - 1e-5f, hi = in_max + 1e-5f;
  size_t bad_range = 0;
  for (size_t k = 0; k < cells; ++k) {
    const float v = h_out[k];
    if (!(v >= lo && v <= hi)) ++bad_range;  // also catches NaN
  }
  if (bad_range != 0) ok = false;

  // (2) sampled cells against the double reference
  std::vector<std::pair<int, int>> pts;
  const int last = n - 1, mid = n / 2;
  for (int a : {0, 1, mid, last - 1, last})
    for (int b : {0, 1, mid, last - 1, last}) pts.emplace_back(a, b);
  for (int s = 0; s < kRandomSamples; ++s) pts.emplace_back(rng.below(n), rng.below(n));
  double max_err = 0.0;
  for (const auto& p : pts) {
    const double ref = reference_cell(h_init, n, iters, p.first, p.second);
    const double got = h_out[static_cast<size_t>(p.first) * n + p.second];
    const double err = std::fabs(got - ref) / std::fabs(ref);
    if (!(err <= kTol)) ok = false;
    if (!(err <= max_err)) max_err = err;
  }

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_init));
  CUDA_CHECK(cudaFree(d_a));
  CUDA_CHECK(cudaFree(d_b));

  std::printf("device=%s sm_%d%d n=%d iters=%d reps=%d seed=%llu\n", prop.name, prop.major,
              prop.minor, n, iters, reps, opt.seed);
  // effective bandwidth: one read and one write of the grid per sweep
  std::printf("effective_GBps=%.1f\n",
              2.0 * static_cast<double>(bytes) * iters / (median * 1e-3) / 1e9);
  std::printf("samples=%zu max_rel_err=%.3e tol=%.1e out_of_range_cells=%zu\n", pts.size(),
              max_err, kTol, bad_range);
  std::printf("time_ms=%.6f\n", median);
  std::puts(ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
