// bench_util.h - small helpers shared by every suite16 benchmark program:
//   CUDA_CHECK (exit 2 on any CUDA error), argument parsing (--n, --reps; exit 2 on
//   bad arguments), a counter-based deterministic input generator usable on host and
//   device, a median-of-samples timing helper (prints "time_ms=..."), and a checker
//   that prints PASS / FAIL and yields the exit code.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),    \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                     \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

// Check the launch that was just issued (configuration errors show up here).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

namespace bu {

// ----------------------------------------------------------------------------------
// Arguments
// ----------------------------------------------------------------------------------
struct Args {
  long long n = 0;
  int reps = 0;
};

[[noreturn]] inline void usage_error(const char* prog, const char* msg, long long min_n,
                                     long long max_n) {
  std::fprintf(stderr, "%s: %s\nusage: %s [--n N (%lld..%lld)] [--reps R (1..100000)]\n",
               prog, msg, prog, min_n, max_n);
  std::exit(2);
}

inline bool parse_ll(const char* s, long long* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

// Accepts "--n N", "--n=N", "--reps R", "--reps=R". Anything else is an error (exit 2).
inline Args parse_args(int argc, char** argv, long long default_n, long long min_n,
                       long long max_n, int default_reps = 20) {
  Args a;
  a.n = default_n;
  a.reps = default_reps;
  const char* prog = argc > 0 ? argv[0] : "bench";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string key = arg, val;
    bool have_val = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      key = arg.substr(0, eq);
      val = arg.substr(eq + 1);
      have_val = true;
    }
    if (key != "--n" && key != "--reps") usage_error(prog, ("unknown argument: " + arg).c_str(), min_n, max_n);
    if (!have_val) {
      if (i + 1 >= argc) usage_error(prog, ("missing value for " + key).c_str(), min_n, max_n);
      val = argv[++i];
    }
    long long v = 0;
    if (!parse_ll(val.c_str(), &v)) usage_error(prog, ("not an integer: " + val).c_str(), min_n, max_n);
    if (key == "--n") {
      if (v < min_n || v > max_n) usage_error(prog, "--n out of range", min_n, max_n);
      a.n = v;
    } else {
      if (v < 1 || v > 100000) usage_error(prog, "--reps out of range", min_n, max_n);
      a.reps = static_cast<int>(v);
    }
  }
  return a;
}

// ----------------------------------------------------------------------------------
// Deterministic inputs: a counter-based hash, identical on host and device, so the CPU
// reference can regenerate any input element bit-exactly without copying it back.
// ----------------------------------------------------------------------------------
__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__host__ __device__ inline uint64_t hash2(uint64_t idx, uint64_t seed) {
  return mix64(idx ^ mix64(seed));
}

// Uniform in [0, 1) with 24 random bits: exact in fp32 on both sides.
__host__ __device__ inline float u01(uint64_t idx, uint64_t seed) {
  return static_cast<float>(hash2(idx, seed) >> 40) * (1.0f / 16777216.0f);
}

// Uniform in [lo, hi): one explicitly fused multiply-add, so host and device agree
// bit for bit whatever contraction / fast-math flags the device code is built with.
__host__ __device__ inline float gen(uint64_t idx, uint64_t seed, float lo, float hi) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(u01(idx, seed), hi - lo, lo);
#else
  return std::fmaf(u01(idx, seed), hi - lo, lo);
#endif
}

// A template so that the definition may appear in several relocatable-device-code TUs.
template <class T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = static_cast<T>(gen(i, seed, lo, hi));
}

inline void fill(float* d, size_t n, uint64_t seed, float lo, float hi) {
  fill_kernel<float><<<1024, 256>>>(d, n, seed, lo, hi);
  CUDA_CHECK_LAUNCH();
}

// Per-thread xorshift32 generator (used by the Monte Carlo programs).
__host__ __device__ inline uint32_t xorshift32(uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}
// Uniform in (0, 1): never 0, so log() is safe. Exact in fp32.
__host__ __device__ inline float bits_to_open01(uint32_t r) {
  return (static_cast<float>(r >> 8) + 0.5f) * (1.0f / 16777216.0f);
}
// Non-zero xorshift seed for stream `idx`.
__host__ __device__ inline uint32_t stream_seed(uint64_t idx, uint64_t seed) {
  uint32_t s = static_cast<uint32_t>(hash2(idx, seed));
  return s ? s : 0x9E3779B9u;
}

// ----------------------------------------------------------------------------------
// Timing: one warm-up launch, then `reps` samples; each sample times `inner` back-to-back
// launches with cudaEvents and divides by `inner`. Prints time_ms=<median per launch>.
// ----------------------------------------------------------------------------------
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return (v.size() % 2) ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

template <class Launch>
double time_launches(Launch&& launch, int reps, int inner = 1) {
  launch();  // warm-up
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> samples;
  samples.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < inner; ++i) launch();
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(static_cast<double>(ms) / inner);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaDeviceSynchronize());
  double med = median(samples);
  std::printf("time_ms=%.6f\n", med);
  std::fflush(stdout);
  return med;
}

// Launch geometry helper: ceil(n / per) as a grid dimension, exit 2 if it cannot fit.
inline unsigned grid_for(long long n, long long per) {
  long long g = (n + per - 1) / per;
  if (g < 1) g = 1;
  if (g > 0x7fffffffLL) {
    std::fprintf(stderr, "grid too large (%lld blocks)\n", g);
    std::exit(2);
  }
  return static_cast<unsigned>(g);
}

// ----------------------------------------------------------------------------------
// Result checking
// ----------------------------------------------------------------------------------
struct Checker {
  long long total = 0, bad = 0;
  double worst = 0.0;  // largest err / allowed seen
  char first[256] = {0};

  // Passes when |got - ref| <= atol + rtol * |ref| (NaN / Inf in `got` fails).
  bool near(double got, double ref, double rtol, double atol, const char* what, long long i,
            long long j = -1) {
    ++total;
    double err = std::fabs(got - ref);
    double lim = atol + rtol * std::fabs(ref);
    bool ok = std::isfinite(got) && err <= lim;
    if (std::isfinite(err) && lim > 0) worst = std::max(worst, err / lim);
    if (!ok) record(what, i, j, got, ref);
    return ok;
  }
  bool exact(double got, double ref, const char* what, long long i, long long j = -1) {
    ++total;
    bool ok = (got == ref);
    if (!ok) record(what, i, j, got, ref);
    return ok;
  }
  void fail(const char* msg) {
    ++total;
    if (bad++ == 0) std::snprintf(first, sizeof(first), "%s", msg);
  }
  void record(const char* what, long long i, long long j, double got, double ref) {
    if (bad++ == 0)
      std::snprintf(first, sizeof(first), "%s[%lld%s%s] got %.9g expected %.9g", what, i,
                    j >= 0 ? "," : "", j >= 0 ? std::to_string(j).c_str() : "", got, ref);
  }
  // Prints PASS or FAIL ... and returns the process exit code (0 / 1).
  int finish() const {
    if (total == 0) {
      std::printf("FAIL nothing was checked\n");
      return 1;
    }
    if (bad == 0) {
      std::printf("PASS\n");
      return 0;
    }
    std::printf("FAIL %lld of %lld checks; first: %s\n", bad, total, first);
    return 1;
  }
};

// `count` sample positions spread over [0, n): always includes 0 and n-1.
inline std::vector<long long> sample_indices(long long n, long long count, uint64_t seed = 7) {
  std::vector<long long> v;
  if (n <= count) {
    for (long long i = 0; i < n; ++i) v.push_back(i);
    return v;
  }
  v.push_back(0);
  v.push_back(n - 1);
  for (long long k = 2; k < count; ++k)
    v.push_back(static_cast<long long>(hash2(static_cast<uint64_t>(k), seed) % static_cast<uint64_t>(n)));
  return v;
}

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(T) + 16));
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> to_host() const {
    std::vector<T> h(n);
    CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  void from_host(const std::vector<T>& h) {
    CUDA_CHECK(cudaMemcpy(p, h.data(), std::min(n, h.size()) * sizeof(T), cudaMemcpyHostToDevice));
  }
  // Copies elements [first, first + count) back.
  std::vector<T> slice(size_t first, size_t count) const {
    std::vector<T> h(count);
    CUDA_CHECK(cudaMemcpy(h.data(), p + first, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

// ----------------------------------------------------------------------------------
// Device reductions (warp shuffles, then one value per warp through shared memory).
// block_* must be called by every thread of the block; blockDim.x a multiple of 32.
// ----------------------------------------------------------------------------------
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <bool IsMax>
__device__ inline float block_reduce(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = IsMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // a previous call may still be reading part[0]
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = blockDim.x >> 5;
    float w = lane < nwarps ? part[lane] : (IsMax ? -INFINITY : 0.0f);
    w = IsMax ? warp_max(w) : warp_sum(w);
    if (lane == 0) part[0] = w;
  }
  __syncthreads();
  return part[0];
}
__device__ inline float block_sum(float v) { return block_reduce<false>(v); }
__device__ inline float block_max(float v) { return block_reduce<true>(v); }

}  // namespace bu
