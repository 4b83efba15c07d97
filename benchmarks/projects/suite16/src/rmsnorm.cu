// rmsnorm: y = x / sqrt(mean(x^2) + eps) * w over rows of an fp32 [rows x 4096] matrix.
// One warp per row; the row is read twice (the second read mostly hits L1/L2). --n = rows.
#include "bench_util.h"

namespace {
constexpr int kHidden = 4096;
constexpr int kWarpsPerBlock = 8;
constexpr int kInner = 20;
constexpr float kEps = 1e-5f;
constexpr uint64_t kSeedX = 0xA11, kSeedW = 0xA12;

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                   float* __restrict__ y, long long rows) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warp leaves together
  const float4* in = reinterpret_cast<const float4*>(x + static_cast<size_t>(row) * kHidden);
  const float4* wv = reinterpret_cast<const float4*>(w);
  float4* out = reinterpret_cast<float4*>(y + static_cast<size_t>(row) * kHidden);
  float ss = 0.f;
#pragma unroll 8
  for (int i = lane; i < kHidden / 4; i += 32) {
    const float4 v = in[i];
    ss = fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, ss))));
  }
  ss = bu::warp_sum(ss);
  const float scale = rsqrtf(ss * (1.0f / kHidden) + kEps);
#pragma unroll 8
  for (int i = lane; i < kHidden / 4; i += 32) {
    const float4 v = in[i], g = wv[i];
    out[i] = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 16384, 1, 65536);
  const long long rows = a.n;
  const size_t count = static_cast<size_t>(rows) * kHidden;
  bu::DeviceBuffer<float> x(count), y(count), w(kHidden);
  bu::fill(x.p, count, kSeedX, -3.0f, 3.0f);
  bu::fill(w.p, kHidden, kSeedW, 0.5f, 1.5f);
  const unsigned grid = bu::grid_for(rows, kWarpsPerBlock);

  bu::time_launches([&] { rmsnorm_kernel<<<grid, kWarpsPerBlock * 32>>>(x.p, w.p, y.p, rows); },
                    a.reps, kInner);

  bu::Checker chk;
  std::vector<double> xr(kHidden);
  for (long long r : bu::sample_indices(rows, 256)) {
    std::vector<float> got = y.slice(static_cast<size_t>(r) * kHidden, kHidden);
    double ss = 0.0;
    for (int c = 0; c < kHidden; ++c) {
      xr[c] = bu::gen(static_cast<uint64_t>(r) * kHidden + c, kSeedX, -3.0f, 3.0f);
      ss += xr[c] * xr[c];
    }
    const double scale = 1.0 / std::sqrt(ss / kHidden + kEps);
    for (int c = 0; c < kHidden; ++c) {
      const double ref = xr[c] * scale * bu::gen(c, kSeedW, 0.5f, 1.5f);
      chk.near(got[c], ref, 1e-3, 1e-6, "y", r, c);
    }
  }
  return chk.finish();
}
