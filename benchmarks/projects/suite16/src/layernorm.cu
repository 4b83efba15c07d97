// layernorm: y = (x - mean) / sqrt(var + eps) * gamma + beta over rows of an fp32
// [rows x 2048] matrix. One 128-thread block per row, row kept in registers, two-pass
// variance. --n = rows.
#include "bench_util.h"

namespace {
constexpr int kHidden = 2048;
constexpr int kThreads = 128;
constexpr int kPer = kHidden / (4 * kThreads);  // float4 per thread
constexpr int kInner = 20;
constexpr float kEps = 1e-5f;
constexpr uint64_t kSeedX = 0x1A7, kSeedG = 0x1A8, kSeedB = 0x1A9;

__global__ void __launch_bounds__(kThreads)
    layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y) {
  const size_t base = static_cast<size_t>(blockIdx.x) * kHidden;
  const float4* in = reinterpret_cast<const float4*>(x + base);
  float4 v[kPer];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    v[k] = in[threadIdx.x + k * kThreads];
    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  const float mean = bu::block_sum(s) * (1.0f / kHidden);
  float q = 0.f;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    v[k].x -= mean; v[k].y -= mean; v[k].z -= mean; v[k].w -= mean;
    q += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
  }
  const float rstd = rsqrtf(bu::block_sum(q) * (1.0f / kHidden) + kEps);
  float4* out = reinterpret_cast<float4*>(y + base);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int i = threadIdx.x + k * kThreads;
    const float4 g = g4[i], b = b4[i];
    out[i] = make_float4(fmaf(v[k].x * rstd, g.x, b.x), fmaf(v[k].y * rstd, g.y, b.y),
                         fmaf(v[k].z * rstd, g.z, b.z), fmaf(v[k].w * rstd, g.w, b.w));
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 32768, 1, 131072);
  const long long rows = a.n;
  const size_t count = static_cast<size_t>(rows) * kHidden;
  bu::DeviceBuffer<float> x(count), y(count), g(kHidden), b(kHidden);
  bu::fill(x.p, count, kSeedX, -2.0f, 6.0f);  // non-zero mean on purpose
  bu::fill(g.p, kHidden, kSeedG, 0.5f, 1.5f);
  bu::fill(b.p, kHidden, kSeedB, -0.5f, 0.5f);

  bu::time_launches([&] { layernorm_kernel<<<(unsigned)rows, kThreads>>>(x.p, g.p, b.p, y.p); },
                    a.reps, kInner);

  bu::Checker chk;
  std::vector<double> xr(kHidden);
  for (long long r : bu::sample_indices(rows, 256)) {
    std::vector<float> got = y.slice(static_cast<size_t>(r) * kHidden, kHidden);
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < kHidden; ++c) {
      xr[c] = bu::gen(static_cast<uint64_t>(r) * kHidden + c, kSeedX, -2.0f, 6.0f);
      mean += xr[c];
    }
    mean /= kHidden;
    for (int c = 0; c < kHidden; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / kHidden + kEps);
    for (int c = 0; c < kHidden; ++c) {
      const double ref = (xr[c] - mean) * rstd * bu::gen(c, kSeedG, 0.5f, 1.5f) +
                         bu::gen(c, kSeedB, -0.5f, 0.5f);
      chk.near(got[c], ref, 1e-3, 1e-5, "y", r, c);
    }
  }
  return chk.finish();
}
