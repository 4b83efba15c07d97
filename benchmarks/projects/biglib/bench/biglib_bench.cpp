// biglib_bench: times a fixed set of biglib_cuda calls and checks the hot ones.
//
// Cases: the four hot kernels on realistic sizes (nearly all of the GPU time) and six cheap
// generated ops on small sizes. Each case: 2 warm-up calls, then R timed calls, each between
// two CUDA events; prints "case=<name> us/run=<median us>" per case, "total_us=<sum of the
// medians>", then checks each hot op's output (whole matrices / heads and sampled rows)
// against a double-precision CPU reference and prints PASS (exit 0) or "FAIL <case>" (exit 1).
// Bad arguments and CUDA errors: a message on stderr and exit 2.
//
//   biglib_bench [--reps R] [--scale S]     R >= 1 (default 20), S >= 1 (default 1)
//
// Host-only C++: uses the CUDA runtime API and biglib.h, no kernels of its own.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "biglib.h"

namespace {

constexpr int kWarmup = 2;
constexpr int kMaxReps = 100000;
constexpr int kMaxScale = 16;  // ~6.6 GB of device memory per unit of scale

[[noreturn]] void die(const char* fmt, ...) {
  std::fflush(stdout);
  std::fputs("biglib_bench: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::exit(2);
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    die("CUDA error in %s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

// A biglib launcher's return code (0 or a cudaError_t).
void ck_lib(int rc, const std::string& what) {
  if (rc != 0) ck(static_cast<cudaError_t>(rc), what.c_str());
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: biglib_bench [--reps R] [--scale S]\n"
               "  --reps R   timed calls per case (1..%d, default 20)\n"
               "  --scale S  multiplies the problem sizes (1..%d, default 1)\n",
               kMaxReps, kMaxScale);
}

int parse_int(const char* opt, const char* s, int lo, int hi) {
  if (s == nullptr || *s == '\0') die("%s needs a value (see --help)", opt);
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
    die("bad value '%s' for %s: expected an integer in %d..%d", s, opt, lo, hi);
  return static_cast<int>(v);
}

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes, const char* what) { ck(cudaMalloc(&p, bytes), what); }
  ~DevBuf() { if (p) cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  float* f() const { return static_cast<float*>(p); }
};

float read_back(const float* dev, size_t index) {
  float v = 0.f;
  ck(cudaMemcpy(&v, dev + index, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (check)");
  return v;
}

std::vector<float> read_back(const float* dev, size_t index, size_t count) {
  std::vector<float> v(count);
  ck(cudaMemcpy(v.data(), dev + index, count * sizeof(float), cudaMemcpyDeviceToHost),
     "cudaMemcpy (check)");
  return v;
}

// i-th of `count` sample indices in [0, n), spread by a hash (first and last included).
uint64_t sample(uint64_t i, uint64_t count, uint64_t n) {
  if (i == 0) return 0;
  if (i + 1 == count) return n - 1;
  return (static_cast<uint64_t>(biglib_hash32(0x5A3B1E, i)) * 4294967296ull +
          biglib_hash32(0x5A3B1F, i)) % n;
}

bool close(double got, double ref, double atol, double rtol) {
  return std::isfinite(got) && std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

struct Case {
  std::string name;
  std::function<int()> launch;
};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (static_cast<double>(v[n / 2 - 1]) + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20, scale = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--reps" || a == "--scale") {
      const char* v = i + 1 < argc ? argv[++i] : nullptr;
      if (a == "--reps") reps = parse_int("--reps", v, 1, kMaxReps);
      else scale = parse_int("--scale", v, 1, kMaxScale);
    } else if (a.rfind("--reps=", 0) == 0) {
      reps = parse_int("--reps", argv[i] + 7, 1, kMaxReps);
    } else if (a.rfind("--scale=", 0) == 0) {
      scale = parse_int("--scale", argv[i] + 8, 1, kMaxScale);
    } else {
      usage(stderr);
      die("unknown argument '%s'", argv[i]);
    }
  }

  int ndev = 0;
  ck(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount (is there a CUDA GPU and driver?)");
  if (ndev < 1) die("no CUDA device found");
  ck(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("# biglib_bench device=\"%s\" sm=%d%d reps=%d scale=%d\n", prop.name, prop.major,
              prop.minor, reps, scale);

  const int64_t S = scale;
  void* const st = nullptr;  // default stream

  // ---- hot: batched GEMM, 512*S matrices of 512x512x512 -----------------------------------
  const int gM = 512, gN = 512, gK = 512, gBatch = static_cast<int>(512 * S);
  const uint64_t seedA = 11, seedB = 12;
  DevBuf gA(sizeof(float) * gBatch * gM * gK, "cudaMalloc"), gB(sizeof(float) * gBatch * gK * gN, "cudaMalloc"),
      gC(sizeof(float) * gBatch * gM * gN, "cudaMalloc");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, gA.p, int64_t(gBatch) * gM * gK, seedA, 1.0, st), "fill");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, gB.p, int64_t(gBatch) * gK * gN, seedB, 1.0, st), "fill");

  // ---- hot: softmax over [131072*S x 2048] --------------------------------------------
  const int64_t smRows = 131072 * S;
  const int smCols = 2048;
  const float smScale = 1.0f;
  const uint64_t seedSm = 21;
  DevBuf smX(sizeof(float) * smRows * smCols, "cudaMalloc"), smY(sizeof(float) * smRows * smCols, "cudaMalloc");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, smX.p, smRows * smCols, seedSm, 8.0, st), "fill");

  // ---- hot: layer norm over [65536*S x 4096] ------------------------------------------
  const int64_t lnRows = 65536 * S;
  const int lnCols = 4096;
  const float lnEps = 1e-5f;
  const uint64_t seedLn = 31, seedG = 32, seedBeta = 33;
  DevBuf lnX(sizeof(float) * lnRows * lnCols, "cudaMalloc"), lnY(sizeof(float) * lnRows * lnCols, "cudaMalloc"),
      lnG(sizeof(float) * lnCols, "cudaMalloc"), lnB(sizeof(float) * lnCols, "cudaMalloc");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, lnX.p, lnRows * lnCols, seedLn, 4.0, st), "fill");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, lnG.p, lnCols, seedG, 1.0, st), "fill");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, lnB.p, lnCols, seedBeta, 1.0, st), "fill");

  // ---- hot: causal soft-capped attention scores, 256*S heads, 1024 x 1024, d = 64 ------
  const int atH = static_cast<int>(256 * S), atSq = 1024, atSk = 1024, atD = 64;
  const float atScale = 0.125f, atCap = 30.0f;
  const uint64_t seedQ = 41, seedK = 42;
  DevBuf atQ(sizeof(float) * atH * atSq * atD, "cudaMalloc"), atK(sizeof(float) * atH * atSk * atD, "cudaMalloc"),
      atS(sizeof(float) * atH * int64_t(atSq) * atSk, "cudaMalloc");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, atQ.p, int64_t(atH) * atSq * atD, seedQ, 4.0, st), "fill");
  ck_lib(biglib_fill_uniform(BIGLIB_F32, atK.p, int64_t(atH) * atSk * atD, seedK, 4.0, st), "fill");

  // ---- cheap generated ops on small sizes ---------------------------------------------
  const int64_t nSmall = 65536 * S, nMid = 262144 * S;
  DevBuf xa(sizeof(double) * nMid, "cudaMalloc"), xb(sizeof(double) * nMid, "cudaMalloc"),
      xo(sizeof(double) * nMid, "cudaMalloc");
  // The same bytes serve as f32, f64 and i32 inputs: fill each view once per case below.
  auto fill_small = [&](biglib_dtype dt, int64_t n) {
    const double amp = dt == BIGLIB_I32 ? 1000.0 : 1.0;
    ck_lib(biglib_fill_uniform(dt, xa.p, n, 51, amp, st), "fill");
    ck_lib(biglib_fill_uniform(dt, xb.p, n, 52, amp, st), "fill");
  };
  ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after fill)");

  std::vector<Case> cases = {
      {"gemm_small",
       [&] { return biglib_gemm_small_f32(gA.f(), gB.f(), gC.f(), gM, gN, gK, gBatch, 1.0f, 0.0f, st); }},
      {"softmax", [&] { return biglib_softmax_f32(smX.f(), smY.f(), smRows, smCols, smScale, st); }},
      {"layernorm",
       [&] { return biglib_layernorm_f32(lnX.f(), lnG.f(), lnB.f(), lnY.f(), lnRows, lnCols, lnEps, st); }},
      {"attention_score",
       [&] {
         return biglib_attention_score_f32(atQ.f(), atK.f(), atS.f(), atH, atSq, atSk, atD, atScale,
                                           atCap, 1, st);
       }},
      {"op_003_f32", [&] { return biglib_op_003(BIGLIB_F32, xa.p, xb.p, xo.p, nSmall, st); }},
      {"op_031_f64", [&] { return biglib_op_031(BIGLIB_F64, xa.p, xb.p, xo.p, nSmall, st); }},
      {"op_058_i32", [&] { return biglib_op_058(BIGLIB_I32, xa.p, xb.p, xo.p, nSmall, st); }},
      {"op_077_reduce_f32", [&] { return biglib_op_077_reduce(BIGLIB_F32, xa.p, xb.p, xo.p, nMid, st); }},
      {"op_096_reduce_f64", [&] { return biglib_op_096_reduce(BIGLIB_F64, xa.p, xb.p, xo.p, nMid, st); }},
      {"op_119_f32", [&] { return biglib_op_119(BIGLIB_F32, xa.p, xb.p, xo.p, nMid, st); }},
  };
  const biglib_dtype small_dtype[] = {BIGLIB_F32, BIGLIB_F32, BIGLIB_F32, BIGLIB_F32, BIGLIB_F32,
                                      BIGLIB_F64, BIGLIB_I32, BIGLIB_F32, BIGLIB_F64, BIGLIB_F32};

  cudaEvent_t e0, e1;
  ck(cudaEventCreate(&e0), "cudaEventCreate");
  ck(cudaEventCreate(&e1), "cudaEventCreate");
  double total = 0.0;
  std::vector<float> ms(reps);
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    if (c >= 4) {
      fill_small(small_dtype[c], nMid);
      ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after fill)");
    }
    for (int w = 0; w < kWarmup; ++w) ck_lib(k.launch(), k.name);
    ck(cudaDeviceSynchronize(), ("cudaDeviceSynchronize (warm-up of " + k.name + ")").c_str());
    for (int r = 0; r < reps; ++r) {
      ck(cudaEventRecord(e0, nullptr), "cudaEventRecord");
      ck_lib(k.launch(), k.name);
      ck(cudaEventRecord(e1, nullptr), "cudaEventRecord");
      ck(cudaEventSynchronize(e1), ("cudaEventSynchronize (" + k.name + ")").c_str());
      ck(cudaEventElapsedTime(&ms[r], e0, e1), "cudaEventElapsedTime");
    }
    const double us = median(ms) * 1000.0;
    total += us;
    std::printf("case=%s us/run=%.2f\n", k.name.c_str(), us);
    std::fflush(stdout);
  }
  std::printf("total_us=%.2f\n", total);
  std::fflush(stdout);

  // ---- checks of the hot ops against a double-precision CPU reference ------------------
  std::vector<std::string> failed;
  // Records a failed case and prints what failed (the first few values per case) on stderr.
  auto fail = [&](const char* name, const char* where, double got, double expected) {
    if (failed.empty() || failed.back() != name) failed.push_back(name);
    std::fprintf(stderr, "check %s: %s: got %.7g, expected %.7g\n", name, where, got, expected);
  };
  char where[96];

  {  // gemm: 4 whole matrices (the first, the last, 2 sampled) and 64 entries sampled from all
    int bad = 0;
    auto check = [&](uint64_t b, uint64_t i, uint64_t j, double got, double ref, double mag) {
      if (!close(got, ref, 1e-5 + 1e-4 * mag, 0.0) && bad++ < 3) {
        std::snprintf(where, sizeof where, "C[%llu][%llu][%llu]", (unsigned long long)b,
                      (unsigned long long)i, (unsigned long long)j);
        fail("gemm_small", where, got, ref);
      }
    };
    const uint64_t whole[] = {0, sample(1, 4, gBatch), sample(2, 4, gBatch), uint64_t(gBatch) - 1};
    std::vector<float> a(size_t(gM) * gK), bm(size_t(gK) * gN);
    std::vector<double> ref(size_t(gM) * gN), mag(size_t(gM) * gN);
    for (uint64_t b : whole) {
      for (size_t t = 0; t < a.size(); ++t) a[t] = biglib_uniform_f32(seedA, b * a.size() + t, 1.0f);
      for (size_t t = 0; t < bm.size(); ++t) bm[t] = biglib_uniform_f32(seedB, b * bm.size() + t, 1.0f);
      std::fill(ref.begin(), ref.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      for (int i = 0; i < gM; ++i)
        for (int k = 0; k < gK; ++k) {
          const double av = a[size_t(i) * gK + k];
          const float* brow = &bm[size_t(k) * gN];
          double* r = &ref[size_t(i) * gN];
          double* m = &mag[size_t(i) * gN];
          for (int j = 0; j < gN; ++j) {
            r[j] += av * brow[j];
            m[j] += std::fabs(av * brow[j]);
          }
        }
      const std::vector<float> got = read_back(gC.f(), b * gM * gN, size_t(gM) * gN);
      for (int i = 0; i < gM; ++i)
        for (int j = 0; j < gN; ++j)
          check(b, i, j, got[size_t(i) * gN + j], ref[size_t(i) * gN + j], mag[size_t(i) * gN + j]);
    }
    for (uint64_t s = 0; s < 64; ++s) {
      const uint64_t idx = sample(s, 64, uint64_t(gBatch) * gM * gN);
      const uint64_t b = idx / (uint64_t(gM) * gN), i = (idx / gN) % gM, j = idx % gN;
      double r = 0.0, m = 0.0;
      for (int k = 0; k < gK; ++k) {
        const double av = biglib_uniform_f32(seedA, (b * gM + i) * gK + k, 1.0f);
        const double bv = biglib_uniform_f32(seedB, (b * gK + k) * gN + j, 1.0f);
        r += av * bv;
        m += std::fabs(av * bv);
      }
      check(b, i, j, read_back(gC.f(), idx), r, m);
    }
  }
  {  // softmax: 64 sampled rows
    int bad = 0;
    std::vector<double> e(smCols);
    for (uint64_t s = 0; s < 64; ++s) {
      const uint64_t row = sample(s, 64, smRows);
      const std::vector<float> got = read_back(smY.f(), row * smCols, smCols);
      double m = -1e300, sum = 0.0;
      for (int c = 0; c < smCols; ++c) {
        e[c] = double(smScale) * biglib_uniform_f32(seedSm, row * smCols + c, 8.0f);
        m = std::max(m, e[c]);
      }
      for (int c = 0; c < smCols; ++c) sum += (e[c] = std::exp(e[c] - m));
      for (int c = 0; c < smCols; ++c)
        if (!close(got[c], e[c] / sum, 1e-7, 2e-3) && bad++ < 3) {
          std::snprintf(where, sizeof where, "y[%llu][%d]", (unsigned long long)row, c);
          fail("softmax", where, got[c], e[c] / sum);
        }
    }
  }
  {  // layernorm: 64 sampled rows
    int bad = 0;
    std::vector<double> x(lnCols);
    for (uint64_t s = 0; s < 64; ++s) {
      const uint64_t row = sample(s, 64, lnRows);
      const std::vector<float> got = read_back(lnY.f(), row * lnCols, lnCols);
      double mean = 0.0, var = 0.0;
      for (int c = 0; c < lnCols; ++c) mean += (x[c] = biglib_uniform_f32(seedLn, row * lnCols + c, 4.0f));
      mean /= lnCols;
      for (int c = 0; c < lnCols; ++c) var += (x[c] - mean) * (x[c] - mean);
      const double rstd = 1.0 / std::sqrt(var / lnCols + lnEps);
      for (int c = 0; c < lnCols; ++c) {
        const double ref = (x[c] - mean) * rstd * biglib_uniform_f32(seedG, c, 1.0f) +
                           biglib_uniform_f32(seedBeta, c, 1.0f);
        if (!close(got[c], ref, 1e-4, 1e-3) && bad++ < 3) {
          std::snprintf(where, sizeof where, "y[%llu][%d]", (unsigned long long)row, c);
          fail("layernorm", where, got[c], ref);
        }
      }
    }
  }
  {  // attention scores: 4 whole heads (the first, the last, 2 sampled), masked positions included
    int bad = 0;
    const int64_t diag = atSk - atSq;
    const uint64_t whole[] = {0, sample(1, 4, atH), sample(2, 4, atH), uint64_t(atH) - 1};
    std::vector<float> q(size_t(atSq) * atD), k(size_t(atSk) * atD);
    for (uint64_t h : whole) {
      for (size_t t = 0; t < q.size(); ++t) q[t] = biglib_uniform_f32(seedQ, h * q.size() + t, 4.0f);
      for (size_t t = 0; t < k.size(); ++t) k[t] = biglib_uniform_f32(seedK, h * k.size() + t, 4.0f);
      const std::vector<float> got = read_back(atS.f(), h * atSq * atSk, size_t(atSq) * atSk);
      for (int64_t i = 0; i < atSq; ++i)
        for (int64_t j = 0; j < atSk; ++j) {
          const double g = got[size_t(i) * atSk + j];
          auto report = [&](double ref) {
            std::snprintf(where, sizeof where, "S[%llu][%lld][%lld]", (unsigned long long)h,
                          (long long)i, (long long)j);
            fail("attention_score", where, g, ref);
          };
          if (j > i + diag) {
            if (!(std::isinf(g) && g < 0) && bad++ < 3) report(-INFINITY);
            continue;
          }
          double dot = 0.0;
          for (int d = 0; d < atD; ++d) dot += double(q[size_t(i) * atD + d]) * k[size_t(j) * atD + d];
          const double ref = atCap * std::tanh(atScale * dot / atCap);
          if (!close(g, ref, 2e-3, 2e-3) && bad++ < 3) report(ref);
        }
    }
  }
  ck(cudaEventDestroy(e0), "cudaEventDestroy");
  ck(cudaEventDestroy(e1), "cudaEventDestroy");

  if (!failed.empty()) {
    std::printf("FAIL %s\n", failed.front().c_str());
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
