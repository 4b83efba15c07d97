// Small benchmark helpers shared by the test projects (tests/projects/*: each adds ../common to its include path).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(call)                                                              \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "CUDA error: %s at %s:%d: %s\n", #call, __FILE__,  \
                   __LINE__, cudaGetErrorString(e_));                         \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

struct BenchArgs {
  int n;
  int reps;
};

static inline BenchArgs parse_args(int argc, char** argv, int default_n) {
  BenchArgs a{default_n, 20};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--n") && i + 1 < argc) {
      a.n = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      a.reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--n N] [--reps R]\n", argv[0]);
      std::exit(2);
    }
  }
  if (a.n <= 0 || a.reps <= 0) {
    std::fprintf(stderr, "--n and --reps must be positive\n");
    std::exit(2);
  }
  return a;
}

static inline float median_of(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return (v.size() % 2) ? v[m] : 0.5f * (v[m - 1] + v[m]);
}

// Runs fn() twice as warm-up, then reps times, each timed with cudaEvents.
template <class F>
static std::vector<float> time_reps(F&& fn, int reps) {
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  for (int w = 0; w < 2; ++w) fn();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(t0));
    fn();
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    CK(cudaGetLastError());
    float t = 0.f;
    CK(cudaEventElapsedTime(&t, t0, t1));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  return ms;
}

// Sampled indices for verification: evenly spaced, plus the last element.
static inline std::vector<int> sample_indices(int n, int count) {
  std::vector<int> idx;
  int step = std::max(1, n / count);
  for (int i = 0; i < n; i += step) idx.push_back(i);
  if (idx.back() != n - 1) idx.push_back(n - 1);
  return idx;
}

static inline bool close_enough(double got, double ref, double rtol, double atol) {
  return std::isfinite(got) && std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

// Deterministic uniform values in [lo, hi) (host-side LCG).
static inline void fill_uniform(std::vector<float>& v, float lo, float hi, unsigned seed) {
  unsigned s = seed * 2654435761u + 12345u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * (float)((s >> 8) * (1.0 / 16777216.0));
  }
}

static inline double checksum_of(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += x;
  return s;
}

// Prints checksum and PASS/FAIL; returns the process exit code.
static inline int report(const std::vector<float>& out, int bad) {
  std::printf("checksum=%.9e\n", checksum_of(out));
  if (bad == 0) {
    std::printf("PASS\n");
    return 0;
  }
  std::printf("mismatches=%d\n", bad);
  std::printf("FAIL\n");
  return 1;
}
