// mc_rdc: Monte Carlo price of 16 arithmetic-average Asian calls (64 monitoring dates,
// 16 paths per thread, per-thread xorshift32 streams). Host side: setup, timing, check.
// --n = paths per option.
#include "bench_util.h"
#include "mc_math.cuh"

namespace {
constexpr int kInner = 1;

struct HostOption {
  double s0, strike, r, sigma, t;
};
HostOption host_option(int o) {
  return {100.0, 80.0 + 40.0 * o / (mc::kOptions - 1), 0.03, 0.2 + 0.2 * ((o * 7) % mc::kOptions) / (mc::kOptions - 1.0), 1.0};
}
double ncdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Lower bound: discretely monitored geometric-average Asian call (closed form).
double geometric_asian(const HostOption& h) {
  const double M = mc::kSteps;
  const double mu = std::log(h.s0) + (h.r - 0.5 * h.sigma * h.sigma) * h.t * (M + 1) / (2 * M);
  const double sg = h.sigma * std::sqrt(h.t * (M + 1) * (2 * M + 1) / (6 * M * M));
  const double d1 = (mu - std::log(h.strike) + sg * sg) / sg;
  return std::exp(-h.r * h.t) * (std::exp(mu + 0.5 * sg * sg) * ncdf(d1) - h.strike * ncdf(d1 - sg));
}
// Upper bound: the European call with the same strike and maturity.
double european(const HostOption& h) {
  const double vst = h.sigma * std::sqrt(h.t);
  const double d1 = (std::log(h.s0 / h.strike) + (h.r + 0.5 * h.sigma * h.sigma) * h.t) / vst;
  return h.s0 * ncdf(d1) - h.strike * std::exp(-h.r * h.t) * ncdf(d1 - vst);
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 2LL << 20, 1, 1LL << 28);
  const long long paths = a.n;
  const long long tpo = (paths + mc::kPathsPerThread - 1) / mc::kPathsPerThread;
  mc::AsianParams hp[mc::kOptions];
  for (int o = 0; o < mc::kOptions; ++o) {
    const HostOption h = host_option(o);
    const double dt = h.t / mc::kSteps;
    hp[o] = {static_cast<float>(h.s0), static_cast<float>(h.strike),
             static_cast<float>((h.r - 0.5 * h.sigma * h.sigma) * dt), static_cast<float>(h.sigma * std::sqrt(dt))};
  }
  mc::set_params(hp);
  bu::DeviceBuffer<float> sums(static_cast<size_t>(mc::kOptions) * tpo);

  bu::time_launches([&] { mc::launch_asian(sums.p, paths, tpo); }, a.reps, kInner);

  bu::Checker chk;
  std::vector<float> got = sums.to_host();
  // (1) Replay 256 sampled threads' streams in double precision.
  for (long long g : bu::sample_indices(mc::kOptions * tpo, 256)) {
    const int o = static_cast<int>(g / tpo);
    const long long t = g % tpo;
    const mc::AsianParams& p = hp[o];
    const int count = static_cast<int>(std::min<long long>(mc::kPathsPerThread, paths - t * mc::kPathsPerThread));
    uint32_t st = bu::stream_seed(static_cast<uint64_t>(o) * tpo + t, mc::kSeed);
    double ref = 0.0;
    for (int k = 0; k < count; ++k) {
      double s = p.s0, acc = 0.0;
      for (int step = 0; step < mc::kSteps; step += 2) {
        const double u1 = bu::bits_to_open01(bu::xorshift32(st));
        const double u2 = bu::bits_to_open01(bu::xorshift32(st));
        const double rad = std::sqrt(-2.0 * std::log(u1)), ang = 2.0 * M_PI * u2;
        s *= std::exp(p.drift_dt + static_cast<double>(p.vol_sdt) * rad * std::cos(ang));
        acc += s;
        s *= std::exp(p.drift_dt + static_cast<double>(p.vol_sdt) * rad * std::sin(ang));
        acc += s;
      }
      ref += std::max(acc / mc::kSteps - p.strike, 0.0);
    }
    chk.near(got[g], ref, 1e-3, 0.02, "thread_sum", o, t);
  }
  // (2) Each estimate must lie between the geometric Asian and European prices, up to
  //     6 standard errors (estimated from the per-thread sums) plus a small allowance.
  for (int o = 0; o < mc::kOptions && tpo >= 64; ++o) {
    const HostOption h = host_option(o);
    double s = 0.0, s2 = 0.0;
    for (long long t = 0; t < tpo; ++t) {
      const double v = got[static_cast<size_t>(o) * tpo + t];
      s += v;
      s2 += v * v;
    }
    const double disc = std::exp(-h.r * h.t);
    const double price = disc * s / paths;
    const double se = disc * std::sqrt(std::max(0.0, (s2 - s * s / tpo) / (tpo - 1)) * tpo) / paths;
    const double slack = 6.0 * se + 5e-3;
    const double lo = geometric_asian(h), hi = european(h);
    if (!(price >= lo - slack && price <= hi + slack)) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "option %d price %.5f outside [%.5f, %.5f] +- %.5f", o, price, lo, hi, slack);
      chk.fail(msg);
    } else {
      ++chk.total;
    }
  }
  return chk.finish();
}
