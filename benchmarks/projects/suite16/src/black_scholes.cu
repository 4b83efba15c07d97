// black_scholes: European call/put prices with the closed-form Black-Scholes formula
// (logf, sqrtf, expf, erff). Each option is priced under 32 (vol, rate, spot-bump)
// scenarios and the scenario-mean call and put prices are stored, so the kernel is
// bound by the transcendental math rather than memory. --n = options.
#include "bench_util.h"

namespace {
constexpr int kScen = 32;
constexpr int kInner = 1;
constexpr uint64_t kSeedS = 0xF01, kSeedK = 0xF02, kSeedT = 0xF03;

__host__ __device__ inline float scen_vol(int s) { return 0.10f + 0.02f * s; }
__host__ __device__ inline float scen_rate(int s) { return 0.01f + 0.001f * s; }
__host__ __device__ inline float scen_bump(int s) { return 1.0f + 0.005f * (s - kScen / 2); }

__device__ inline float norm_cdf(float x) { return 0.5f * (1.0f + erff(x * 0.70710678118654752f)); }

__global__ void init_options(float* S, float* K, float* T, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    S[i] = bu::gen(i, kSeedS, 50.f, 150.f);
    K[i] = bu::gen(i, kSeedK, 50.f, 150.f);
    T[i] = bu::gen(i, kSeedT, 0.1f, 2.0f);
  }
}

__global__ void __launch_bounds__(256)
    bs_kernel(const float* __restrict__ S, const float* __restrict__ K, const float* __restrict__ T,
              float* __restrict__ call, float* __restrict__ put, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float k = K[i], t = T[i], s0 = S[i];
  const float sqrt_t = sqrtf(t);
  float c_sum = 0.f, p_sum = 0.f;
#pragma unroll 4
  for (int sc = 0; sc < kScen; ++sc) {
    const float s = s0 * scen_bump(sc), vol = scen_vol(sc), r = scen_rate(sc);
    const float vst = vol * sqrt_t;
    const float d1 = (logf(s / k) + (r + 0.5f * vol * vol) * t) / vst;
    const float d2 = d1 - vst;
    const float disc_k = k * expf(-r * t);
    const float c = s * norm_cdf(d1) - disc_k * norm_cdf(d2);
    c_sum += c;
    p_sum += c - s + disc_k;  // put-call parity
  }
  call[i] = c_sum * (1.0f / kScen);
  put[i] = p_sum * (1.0f / kScen);
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 32LL << 20, 1, 1LL << 27);
  const long long n = a.n;
  bu::DeviceBuffer<float> S(n), K(n), T(n), call(n), put(n);
  init_options<<<1024, 256>>>(S.p, K.p, T.p, n);
  CUDA_CHECK_LAUNCH();
  const unsigned grid = bu::grid_for(n, 256);

  bu::time_launches([&] { bs_kernel<<<grid, 256>>>(S.p, K.p, T.p, call.p, put.p, n); }, a.reps, kInner);

  // 4096 sampled options in double (std::erf). Prices are in currency units with spot
  // 50..150: 1e-3 relative plus a 2e-3 absolute floor.
  bu::Checker chk;
  std::vector<float> gc = call.to_host(), gp = put.to_host();
  auto ncdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  for (long long i : bu::sample_indices(n, 4096)) {
    const double s0 = bu::gen(i, kSeedS, 50.f, 150.f), k = bu::gen(i, kSeedK, 50.f, 150.f),
                 t = bu::gen(i, kSeedT, 0.1f, 2.0f);
    double c_sum = 0.0, p_sum = 0.0;
    for (int sc = 0; sc < kScen; ++sc) {
      const double s = s0 * scen_bump(sc), vol = scen_vol(sc), r = scen_rate(sc);
      const double vst = vol * std::sqrt(t);
      const double d1 = (std::log(s / k) + (r + 0.5 * vol * vol) * t) / vst, d2 = d1 - vst;
      const double dk = k * std::exp(-r * t);
      c_sum += s * ncdf(d1) - dk * ncdf(d2);
      p_sum += dk * ncdf(-d2) - s * ncdf(-d1);
    }
    chk.near(gc[i], c_sum / kScen, 1e-3, 2e-3, "call", i);
    chk.near(gp[i], p_sum / kScen, 1e-3, 2e-3, "put", i);
  }
  return chk.finish();
}
