// mc_option: Monte Carlo pricing of 64 European calls under geometric Brownian motion.
// Each thread draws 256 paths with its own xorshift32 stream, normals by Box-Muller
// (logf, sqrtf, sincospif), terminal price by expf, and writes its payoff sum.
// --n = paths per option.
#include "bench_util.h"

namespace {
constexpr int kOptions = 64;
constexpr int kPathsPerThread = 256;  // even
constexpr int kThreads = 256;
constexpr int kInner = 1;
constexpr uint64_t kSeed = 0x1001;

struct OptionParams {
  float s0, strike, drift, vol;  // drift = (r - sigma^2/2) T, vol = sigma sqrt(T)
};
__constant__ OptionParams c_opt[kOptions];

struct HostOption {
  double s0, strike, r, sigma, t;
};
HostOption host_option(int o) {
  return {100.0, 70.0 + 60.0 * o / (kOptions - 1), 0.03, 0.15 + 0.35 * ((o * 37) % kOptions) / (kOptions - 1.0),
          0.25 + 1.75 * ((o * 11) % kOptions) / (kOptions - 1.0)};
}

__global__ void __launch_bounds__(kThreads) mc_kernel(float* __restrict__ thread_sums, long long paths, long long threads_per_opt) {
  const int o = blockIdx.y;
  const long long t = blockIdx.x * (long long)kThreads + threadIdx.x;
  if (t >= threads_per_opt) return;
  const OptionParams p = c_opt[o];
  const long long first = t * kPathsPerThread;
  const int count = static_cast<int>(paths - first < kPathsPerThread ? paths - first : kPathsPerThread);
  uint32_t st = bu::stream_seed(static_cast<uint64_t>(o) * threads_per_opt + t, kSeed);
  float sum = 0.f;
  for (int k = 0; k < count; k += 2) {
    const float u1 = bu::bits_to_open01(bu::xorshift32(st));
    const float u2 = bu::bits_to_open01(bu::xorshift32(st));
    const float r = sqrtf(-2.0f * logf(u1));
    float sn, cs;
    sincospif(2.0f * u2, &sn, &cs);
    sum += fmaxf(p.s0 * expf(fmaf(p.vol, r * cs, p.drift)) - p.strike, 0.f);
    if (k + 1 < count) sum += fmaxf(p.s0 * expf(fmaf(p.vol, r * sn, p.drift)) - p.strike, 0.f);
  }
  thread_sums[static_cast<size_t>(o) * threads_per_opt + t] = sum;
}

double bs_call(const HostOption& h) {
  const double vst = h.sigma * std::sqrt(h.t);
  const double d1 = (std::log(h.s0 / h.strike) + (h.r + 0.5 * h.sigma * h.sigma) * h.t) / vst;
  auto N = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  return h.s0 * N(d1) - h.strike * std::exp(-h.r * h.t) * N(d1 - vst);
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 32LL << 20, 2, 1LL << 30);
  const long long paths = a.n;
  const long long tpo = (paths + kPathsPerThread - 1) / kPathsPerThread;
  OptionParams hp[kOptions];
  for (int o = 0; o < kOptions; ++o) {
    const HostOption h = host_option(o);
    hp[o] = {static_cast<float>(h.s0), static_cast<float>(h.strike),
             static_cast<float>((h.r - 0.5 * h.sigma * h.sigma) * h.t), static_cast<float>(h.sigma * std::sqrt(h.t))};
  }
  CUDA_CHECK(cudaMemcpyToSymbol(c_opt, hp, sizeof(hp)));
  bu::DeviceBuffer<float> sums(static_cast<size_t>(kOptions) * tpo);
  const dim3 grid(bu::grid_for(tpo, kThreads), kOptions);

  bu::time_launches([&] { mc_kernel<<<grid, kThreads>>>(sums.p, paths, tpo); }, a.reps, kInner);

  bu::Checker chk;
  std::vector<float> got = sums.to_host();
  // (1) Replay 512 sampled threads' random streams in double: same uniforms, exact math.
  for (long long g : bu::sample_indices(kOptions * tpo, 512)) {
    const int o = static_cast<int>(g / tpo);
    const long long t = g % tpo;
    const OptionParams& p = hp[o];
    const int count = static_cast<int>(std::min<long long>(kPathsPerThread, paths - t * kPathsPerThread));
    uint32_t st = bu::stream_seed(static_cast<uint64_t>(o) * tpo + t, kSeed);
    double ref = 0.0;
    for (int k = 0; k < count; k += 2) {
      const double u1 = bu::bits_to_open01(bu::xorshift32(st));
      const double u2 = bu::bits_to_open01(bu::xorshift32(st));
      const double r = std::sqrt(-2.0 * std::log(u1)), ang = 2.0 * M_PI * u2;
      ref += std::max(p.s0 * std::exp(p.drift + static_cast<double>(p.vol) * r * std::cos(ang)) - p.strike, 0.0);
      if (k + 1 < count)
        ref += std::max(p.s0 * std::exp(p.drift + static_cast<double>(p.vol) * r * std::sin(ang)) - p.strike, 0.0);
    }
    chk.near(got[g], ref, 1e-3, 0.05, "thread_sum", o, t);
  }
  // (2) Each option's estimate must agree with the Black-Scholes price within 6 standard
  //     errors (estimated from the per-thread sums) plus a small bias allowance.
  for (int o = 0; o < kOptions && tpo >= 64; ++o) {  // too few threads: no error estimate
    const HostOption h = host_option(o);
    double s = 0.0, s2 = 0.0;
    for (long long t = 0; t < tpo; ++t) {
      const double v = got[static_cast<size_t>(o) * tpo + t];
      s += v;
      s2 += v * v;
    }
    const double disc = std::exp(-h.r * h.t);
    const double price = disc * s / paths;
    const double var_thread = tpo > 1 ? std::max(0.0, (s2 - s * s / tpo) / (tpo - 1)) : 0.0;
    const double se = disc * std::sqrt(var_thread * tpo) / paths;
    const double exact = bs_call(h);
    chk.near(price, exact, 2e-3, 6.0 * se + 5e-3, "price", o);
  }
  return chk.finish();
}
