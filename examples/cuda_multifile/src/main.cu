// multi_bench: host driver for six kernels spread over five translation units.
//
// For each kernel: deterministic inputs on the host (64-bit LCGs), copy to the
// GPU, one warm-up launch, then --reps timed launches (cudaEvents); the median is
// reported. Every launch does identical work. Results are checked against a CPU
// reference in double precision (sampled outputs for the big kernels, everything
// for the reduction and the histogram).
//
// Output: "kernel <name> time_ms=<median>" per kernel, then "time_ms=<sum of the
// medians>" and "PASS". On a mismatch: "mismatch kernel=<name> ..." lines, then
// "FAIL" and exit code 1 (also on any CUDA error); bad options: exit code 2.

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compute.h"
#include "device_math.h"
#include "gemm.h"
#include "histogram.h"
#include "reduce.h"
#include "stream.h"

#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    const cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),   \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                    \
      std::fflush(stderr);                                                           \
      std::puts("FAIL");                                                             \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

namespace {

// ------------------------------------------------------------------ options, sizes

struct Options {
  int size = 2;
  int reps = 10;
  std::string only;
  std::uint64_t seed = 12345;
};

const char* const kKernelNames[] = {"triad", "transpose", "compute", "sgemm", "reduce",
                                    "histogram"};

[[noreturn]] void bad_option(const char* what, const char* arg) {
  std::fprintf(stderr,
               "multi_bench: %s '%s' (usage: multi_bench [--size 1..8] [--reps R] "
               "[--only triad|transpose|compute|sgemm|reduce|histogram] [--seed N])\n",
               what, arg);
  std::exit(2);
}

bool parse_u64(const char* s, std::uint64_t& out) {
  if (s[0] < '0' || s[0] > '9') return false;  // no sign, no blanks
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: multi_bench [--size S (1..8, default 2)] [--reps R (1..100000, default 10)]\n"
          "                   [--only NAME] [--seed N (default 12345)]\n"
          "kernels: triad transpose compute sgemm reduce histogram\n");
      std::exit(0);
    }
    if (a != "--size" && a != "--reps" && a != "--only" && a != "--seed")
      bad_option("unknown option", argv[i]);
    if (i + 1 >= argc) bad_option("missing value for", argv[i]);
    const char* val = argv[++i];
    if (a == "--only") {
      bool known = false;
      for (const char* k : kKernelNames) known = known || std::string(k) == val;
      if (!known) bad_option("unknown kernel name for --only", val);
      o.only = val;
      continue;
    }
    std::uint64_t v = 0;
    if (!parse_u64(val, v)) bad_option(("bad integer for " + a).c_str(), val);
    if (a == "--size") {
      if (v < 1 || v > 8) bad_option("--size must be in 1..8, got", val);
      o.size = static_cast<int>(v);
    } else if (a == "--reps") {
      if (v < 1 || v > 100000) bad_option("--reps must be in 1..100000, got", val);
      o.reps = static_cast<int>(v);
    } else {
      o.seed = v;
    }
  }
  return o;
}

// Problem sizes for scale factor S. The "+ small odd" terms keep the element
// counts off multiples of the block / vector / tile sizes so tails get exercised.
struct Sizes {
  std::size_t triad_n;   // floats per array
  int tr_rows, tr_cols;  // transpose input is tr_rows x tr_cols
  std::size_t compute_n;
  int gemm_m, gemm_n, gemm_k;
  std::size_t reduce_n;  // shared by reduce and histogram
};

Sizes make_sizes(int s) {
  Sizes z{};
  const std::size_t S = static_cast<std::size_t>(s);
  z.triad_n = S * (std::size_t{48} << 20) + 3;
  z.tr_rows = 8197;
  z.tr_cols = 6144 * s + 3;
  z.compute_n = S * (std::size_t{1} << 20) + 37;
  z.gemm_m = 2048;
  z.gemm_n = 2048;
  z.gemm_k = 1024 * s;
  z.reduce_n = S * (std::size_t{48} << 20) + 5;
  return z;
}

constexpr float kTriadScalar = 3.0f;
constexpr int kComputeIters = 128;
constexpr int kSamples = 512;
constexpr int kMaxReported = 10;

// ------------------------------------------------------------------ random numbers

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t derive_seed(std::uint64_t base, std::uint64_t tag) {
  return splitmix64(base ^ splitmix64(tag));
}

// 64-bit LCG (Knuth's MMIX constants).
struct Lcg {
  std::uint64_t state;
  explicit Lcg(std::uint64_t seed) : state(splitmix64(seed)) {}
  std::uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state;
  }
  float unit() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  // uniform in [0, n), n < 2^32
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>(((next() >> 32) * static_cast<std::uint64_t>(n)) >> 32);
  }
};

// Fills v[0..n) with lo + (hi - lo) * u, u in [0, 1) on a 2^-24 grid. Four
// interleaved LCG streams keep the host fill fast (independent dependency chains).
void fill_uniform(float* v, std::size_t n, std::uint64_t seed, float lo, float hi) {
  Lcg g0(seed * 4 + 0), g1(seed * 4 + 1), g2(seed * 4 + 2), g3(seed * 4 + 3);
  const float w = hi - lo;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v[i + 0] = lo + w * g0.unit();
    v[i + 1] = lo + w * g1.unit();
    v[i + 2] = lo + w * g2.unit();
    v[i + 3] = lo + w * g3.unit();
  }
  for (; i < n; ++i) v[i] = lo + w * g0.unit();
}

// Sample positions in [0, n): both ends, the middle, plus kSamples random ones.
std::vector<std::size_t> sample_indices(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> idx = {0, n / 2, n - 1};
  if (n > 4) idx.insert(idx.end(), {1, n - 2, n - 3, n - 4});
  Lcg g(seed);
  for (int s = 0; s < kSamples; ++s) idx.push_back(g.below(n));
  return idx;
}

// ------------------------------------------------------------------ buffers

template <class T>
std::unique_ptr<T[]> host_array(std::size_t n) {
  return std::unique_ptr<T[]>(new T[n]);  // uninitialized: filled right after
}

template <class T>
class DevBuf {
 public:
  explicit DevBuf(std::size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, n_ * sizeof(T))); }
  ~DevBuf() { CUDA_CHECK(cudaFree(p_)); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;

  T* get() const { return p_; }
  void upload(const T* h) {
    CUDA_CHECK(cudaMemcpy(p_, h, n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* h) const {
    CUDA_CHECK(cudaMemcpy(h, p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
  }
  // all bytes 0xFF (a NaN for float): outputs the kernel never writes fail the check
  void poison() { CUDA_CHECK(cudaMemset(p_, 0xFF, n_ * sizeof(T))); }
  T fetch(std::size_t i) const {
    T v;
    CUDA_CHECK(cudaMemcpy(&v, p_ + i, sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

// Host scratch shared by all kernels. Each slot reserves room for the largest
// array once; re-allocating hundreds of MB per kernel would page-fault them in
// again every time, and that dominated the host time. Untouched pages cost nothing.
// The reduce/histogram input (x = u^2, u uniform in [0, 1): skewed towards 0, so the
// low histogram bins see more atomic contention) is generated once into slot 1 and
// uploaded once; a kernel that takes slot 1 for itself marks that copy stale.
class Context {
 public:
  explicit Context(const Sizes& sz)
      : cap_(std::max({sz.triad_n, static_cast<std::size_t>(sz.tr_rows) * sz.tr_cols,
                       sz.compute_n, static_cast<std::size_t>(sz.gemm_m) * sz.gemm_k,
                       static_cast<std::size_t>(sz.gemm_k) * sz.gemm_n,
                       static_cast<std::size_t>(sz.gemm_m) * sz.gemm_n, sz.reduce_n})) {}

  // n floats of scratch in slot 0..2 (contents undefined)
  float* scratch(int slot, std::size_t n) {
    if (slot == kReduceSlot) reduce_host_valid_ = false;
    return slot_ptr(slot, n);
  }

  // host copy (valid until the next scratch(1, ...)) and device copy of the input
  const float* reduce_input_host(std::size_t n, std::uint64_t seed) {
    if (!reduce_host_valid_) {
      float* h = slot_ptr(kReduceSlot, n);
      fill_uniform(h, n, derive_seed(seed, 50), 0.0f, 1.0f);
      for (std::size_t i = 0; i < n; ++i) h[i] = h[i] * h[i];
      reduce_host_valid_ = true;
      if (!reduce_dev_) {
        reduce_dev_ = std::make_unique<DevBuf<float>>(n);
        reduce_dev_->upload(h);
      }
    }
    return slot_[kReduceSlot].get();
  }
  const float* reduce_input_device(std::size_t n, std::uint64_t seed) {
    reduce_input_host(n, seed);
    return reduce_dev_->get();
  }

 private:
  static constexpr int kSlots = 3;
  static constexpr int kReduceSlot = 1;

  float* slot_ptr(int slot, std::size_t n) {
    if (slot < 0 || slot >= kSlots || n > cap_) {
      std::fprintf(stderr, "internal error: host scratch slot %d, %zu floats\n", slot, n);
      std::exit(1);
    }
    if (!slot_[slot]) slot_[slot] = host_array<float>(cap_);
    return slot_[slot].get();
  }

  std::size_t cap_;
  std::unique_ptr<float[]> slot_[kSlots];
  bool reduce_host_valid_ = false;
  std::unique_ptr<DevBuf<float>> reduce_dev_;
};

// ------------------------------------------------------------------ timing, checking

// One warm-up launch, then `reps` launches each bracketed by cudaEvents; median ms.
template <class Launch>
double median_ms(int reps, Launch&& launch) {
  CUDA_CHECK(launch());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(launch());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    t.push_back(ms);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(t.begin(), t.end());
  const std::size_t m = t.size() / 2;
  return (t.size() % 2) ? t[m] : 0.5 * (t[m - 1] + t[m]);
}

// Collects mismatches of one kernel; prints the first kMaxReported of them.
class Checker {
 public:
  explicit Checker(const char* kernel) : kernel_(kernel) {}
  __attribute__((format(printf, 2, 3))) void fail(const char* fmt, ...) {
    if (++count_ <= kMaxReported) {
      std::printf("mismatch kernel=%s ", kernel_);
      va_list ap;
      va_start(ap, fmt);
      std::vprintf(fmt, ap);
      va_end(ap);
      std::printf("\n");
    }
  }
  bool finish() const {
    if (count_ > kMaxReported)
      std::printf("mismatch kernel=%s: %ld mismatches in total\n", kernel_, count_);
    return count_ == 0;
  }

 private:
  const char* kernel_;
  long count_ = 0;
};

// false for NaN
bool within(double got, double ref, double tol) { return std::fabs(got - ref) <= tol; }

// ------------------------------------------------------------------ benchmarks

bool bench_triad(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const std::size_t n = sz.triad_n;
  float* hb = ctx.scratch(0, n);
  float* hc = ctx.scratch(1, n);
  fill_uniform(hb, n, derive_seed(opt.seed, 10), -1.0f, 1.0f);
  fill_uniform(hc, n, derive_seed(opt.seed, 11), -1.0f, 1.0f);
  DevBuf<float> da(n), db(n), dc(n);
  db.upload(hb);
  dc.upload(hc);
  da.poison();
  const float s = kTriadScalar;
  ms = median_ms(opt.reps, [&] { return stream::triad(da.get(), db.get(), dc.get(), s, n); });

  Checker chk("triad");
  for (const std::size_t i : sample_indices(n, derive_seed(opt.seed, 12))) {
    const double b = hb[i], c = hc[i];
    const double ref = b + static_cast<double>(s) * c;
    const double got = da.fetch(i);
    const double tol = 1e-5 * (std::fabs(b) + std::fabs(s * c));
    if (!within(got, ref, tol)) chk.fail("a[%zu]: got %.9g ref %.9g tol %.3g", i, got, ref, tol);
  }
  return chk.finish();
}

bool bench_transpose(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const int rows = sz.tr_rows, cols = sz.tr_cols;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  float* hin = ctx.scratch(0, n);
  fill_uniform(hin, n, derive_seed(opt.seed, 20), -1.0f, 1.0f);
  DevBuf<float> din(n), dout(n);
  din.upload(hin);
  dout.poison();
  ms = median_ms(opt.reps, [&] { return stream::transpose(dout.get(), din.get(), rows, cols); });

  // (r, c) of the input; out is cols x rows, so out[c][r] must equal in[r][c] exactly
  std::vector<std::pair<int, int>> pts = {
      {0, 0},   {0, cols - 1}, {rows - 1, 0},        {rows - 1, cols - 1},
      {31, 32}, {32, 31},      {rows - 1, cols - 2}, {rows - 2, cols - 1}};
  Lcg g(derive_seed(opt.seed, 21));
  for (int s = 0; s < kSamples; ++s)
    pts.emplace_back(static_cast<int>(g.below(rows)), static_cast<int>(g.below(cols)));
  Checker chk("transpose");
  for (const auto& p : pts) {
    const float ref = hin[static_cast<std::size_t>(p.first) * cols + p.second];
    const float got = dout.fetch(static_cast<std::size_t>(p.second) * rows + p.first);
    if (!(got == ref))
      chk.fail("out[%d][%d]: got %.9g ref %.9g", p.second, p.first, static_cast<double>(got),
               static_cast<double>(ref));
  }
  return chk.finish();
}

bool bench_compute(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const std::size_t n = sz.compute_n;
  float* hx = ctx.scratch(0, n);
  float* hp = ctx.scratch(1, n);
  float* hout = ctx.scratch(2, n);
  fill_uniform(hx, n, derive_seed(opt.seed, 30), -1.5f, 1.5f);
  fill_uniform(hp, n, derive_seed(opt.seed, 31), -0.8f, 0.8f);
  DevBuf<float> dx(n), dp(n), dout(n);
  dx.upload(hx);
  dp.upload(hp);
  dout.poison();
  ms = median_ms(opt.reps, [&] {
    return compute::iterate(dout.get(), dx.get(), dp.get(), n, kComputeIters);
  });
  dout.download(hout);

  Checker chk("compute");
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(hout[i]))
      chk.fail("out[%zu]: not finite (%g)", i, static_cast<double>(hout[i]));
  for (const std::size_t i : sample_indices(n, derive_seed(opt.seed, 32))) {
    double x = hx[i];
    const double p = hp[i];
    for (int it = 0; it < kComputeIters; ++it) {
      const double y = static_cast<double>(compute::kA) * std::sin(x) +
                       static_cast<double>(compute::kB) * std::exp(-x * x) +
                       static_cast<double>(compute::kC) * dm::soft_sat_ref(x) + p;
      x = dm::blend_ref(x, y, compute::kW);
    }
    const double got = hout[i];
    const double tol = 1e-3 * std::fabs(x) + 1e-4;
    if (!within(got, x, tol)) chk.fail("out[%zu]: got %.9g ref %.9g tol %.3g", i, got, x, tol);
  }
  return chk.finish();
}

bool bench_sgemm(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const int M = sz.gemm_m, N = sz.gemm_n, K = sz.gemm_k;
  const std::size_t na = static_cast<std::size_t>(M) * K, nb = static_cast<std::size_t>(K) * N,
                    nc = static_cast<std::size_t>(M) * N;
  float* ha = ctx.scratch(0, na);
  float* hb = ctx.scratch(1, nb);
  float* hc = ctx.scratch(2, nc);
  fill_uniform(ha, na, derive_seed(opt.seed, 40), -1.0f, 1.0f);
  fill_uniform(hb, nb, derive_seed(opt.seed, 41), -1.0f, 1.0f);
  DevBuf<float> da(na), db(nb), dc(nc);
  da.upload(ha);
  db.upload(hb);
  dc.poison();
  ms = median_ms(opt.reps, [&] { return gemm::sgemm(dc.get(), da.get(), db.get(), M, N, K); });
  dc.download(hc);

  Checker chk("sgemm");
  for (std::size_t i = 0; i < nc; ++i)
    if (!std::isfinite(hc[i]))
      chk.fail("C[%zu]: not finite (%g)", i, static_cast<double>(hc[i]));
  std::vector<std::pair<int, int>> pts = {
      {0, 0},     {0, N - 1},  {M - 1, 0}, {M - 1, N - 1},
      {127, 128}, {128, 127},  {63, 64},   {64, 63}};
  Lcg g(derive_seed(opt.seed, 42));
  for (int s = 0; s < kSamples; ++s)
    pts.emplace_back(static_cast<int>(g.below(M)), static_cast<int>(g.below(N)));
  for (const auto& p : pts) {
    const int i = p.first, j = p.second;
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < K; ++k) {
      const double t = static_cast<double>(ha[static_cast<std::size_t>(i) * K + k]) *
                       static_cast<double>(hb[static_cast<std::size_t>(k) * N + j]);
      ref += t;
      mag += std::fabs(t);
    }
    const double got = hc[static_cast<std::size_t>(i) * N + j];
    // float accumulation over K terms: error well below 1e-4 of sum |a_ik b_kj|
    const double tol = 1e-4 * mag + 1e-6;
    if (!within(got, ref, tol))
      chk.fail("C[%d][%d]: got %.9g ref %.9g tol %.3g", i, j, got, ref, tol);
  }
  return chk.finish();
}

bool bench_reduce(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const std::size_t n = sz.reduce_n;
  const float* dx = ctx.reduce_input_device(n, opt.seed);
  DevBuf<double> dres(1);
  ms = median_ms(opt.reps, [&] { return reduce::poly_sum(dres.get(), dx, n); });
  const double got = dres.fetch(0);

  const float* hx = ctx.reduce_input_host(n, opt.seed);
  double acc[4] = {0, 0, 0, 0}, mag[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < n; ++i) {
    const double f = dm::poly_ref(hx[i]);
    acc[i & 3] += f;
    mag[i & 3] += std::fabs(f);
  }
  const double ref = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  const double tol = 1e-5 * ((mag[0] + mag[1]) + (mag[2] + mag[3]));
  Checker chk("reduce");
  if (!within(got, ref, tol)) chk.fail("sum: got %.12g ref %.12g tol %.3g", got, ref, tol);
  return chk.finish();
}

bool bench_histogram(const Options& opt, const Sizes& sz, Context& ctx, double& ms) {
  const std::size_t n = sz.reduce_n;
  const float* dx = ctx.reduce_input_device(n, opt.seed);
  DevBuf<unsigned int> dbins(histogram::kBins);
  ms = median_ms(opt.reps, [&] { return histogram::count(dbins.get(), dx, n); });
  std::vector<unsigned int> got(histogram::kBins);
  dbins.download(got.data());

  const float* hx = ctx.reduce_input_host(n, opt.seed);
  std::vector<std::uint64_t> ref(histogram::kBins, 0);
  for (std::size_t i = 0; i < n; ++i)
    ++ref[static_cast<std::size_t>(
        dm::bin_index_ref(hx[i], histogram::kLo, histogram::kScale, histogram::kBins))];
  Checker chk("histogram");
  std::uint64_t total = 0;
  for (int b = 0; b < histogram::kBins; ++b) {
    total += got[b];
    if (got[b] != ref[b])
      chk.fail("bin %d: got %u ref %llu", b, got[b], static_cast<unsigned long long>(ref[b]));
  }
  if (total != n)
    chk.fail("total count %llu != n %zu", static_cast<unsigned long long>(total), n);
  return chk.finish();
}

using BenchFn = bool (*)(const Options&, const Sizes&, Context&, double&);
struct Bench {
  const char* name;
  BenchFn fn;
};
const Bench kBenches[] = {{"triad", bench_triad},   {"transpose", bench_transpose},
                          {"compute", bench_compute}, {"sgemm", bench_sgemm},
                          {"reduce", bench_reduce}, {"histogram", bench_histogram}};
static_assert(sizeof(kBenches) / sizeof(kBenches[0]) ==
                  sizeof(kKernelNames) / sizeof(kKernelNames[0]),
              "kernel name list and bench table must match");

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_options(argc, argv);
  const Sizes sz = make_sizes(opt.size);

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("multi_bench device=%s sm_%d%d size=%d reps=%d seed=%llu\n", prop.name,
              prop.major, prop.minor, opt.size, opt.reps,
              static_cast<unsigned long long>(opt.seed));
  std::printf("sizes triad_n=%zu transpose=%dx%d compute_n=%zu(x%d iters) sgemm=%dx%dx%d "
              "reduce_n=%zu\n",
              sz.triad_n, sz.tr_rows, sz.tr_cols, sz.compute_n, kComputeIters, sz.gemm_m,
              sz.gemm_n, sz.gemm_k, sz.reduce_n);

  Context ctx(sz);
  double total_ms = 0.0;
  for (const Bench& b : kBenches) {
    if (!opt.only.empty() && opt.only != b.name) continue;
    double ms = 0.0;
    const bool ok = b.fn(opt, sz, ctx, ms);
    std::printf("kernel %s time_ms=%.6f\n", b.name, ms);
    std::fflush(stdout);
    if (!ok) {
      std::puts("FAIL");
      return 1;
    }
    total_ms += ms;
  }
  std::printf("time_ms=%.6f\n", total_ms);
  std::puts("PASS");
  return 0;
}
