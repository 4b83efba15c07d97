// softmax_rows: row-wise softmax of an fp32 [rows x 4096] matrix (one block per row,
// the row held in registers; expf per element). --n = rows.
#include "bench_util.h"

namespace {
constexpr int kCols = 4096;
constexpr int kThreads = 256;
constexpr int kVecPerThread = kCols / (4 * kThreads);  // float4 loads per thread
constexpr int kInner = 20;                             // launches per timed sample
constexpr uint64_t kSeed = 0x50F7;

__global__ void __launch_bounds__(kThreads) softmax_kernel(const float* __restrict__ x,
                                                           float* __restrict__ y) {
  const size_t row = blockIdx.x;
  const float4* in = reinterpret_cast<const float4*>(x + row * kCols);
  float4* out = reinterpret_cast<float4*>(y + row * kCols);
  float4 v[kVecPerThread];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    v[k] = in[threadIdx.x + k * kThreads];
    m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  }
  m = bu::block_max(m);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    v[k].x = expf(v[k].x - m);
    v[k].y = expf(v[k].y - m);
    v[k].z = expf(v[k].z - m);
    v[k].w = expf(v[k].w - m);
    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  s = bu::block_sum(s);
  const float inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k)
    out[threadIdx.x + k * kThreads] =
        make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 16384, 1, 65536);
  const long long rows = a.n;
  const size_t count = static_cast<size_t>(rows) * kCols;
  bu::DeviceBuffer<float> x(count), y(count);
  bu::fill(x.p, count, kSeed, -8.0f, 8.0f);

  bu::time_launches([&] { softmax_kernel<<<(unsigned)rows, kThreads>>>(x.p, y.p); }, a.reps,
                    kInner);

  // Check 256 sampled rows against a double-precision reference.
  bu::Checker chk;
  std::vector<double> ref(kCols);
  for (long long r : bu::sample_indices(rows, 256)) {
    std::vector<float> got = y.slice(static_cast<size_t>(r) * kCols, kCols);
    double m = -1e300, s = 0.0;
    for (int c = 0; c < kCols; ++c) {
      ref[c] = bu::gen(static_cast<uint64_t>(r) * kCols + c, kSeed, -8.0f, 8.0f);
      m = std::max(m, ref[c]);
    }
    for (int c = 0; c < kCols; ++c) s += (ref[c] = std::exp(ref[c] - m));
    for (int c = 0; c < kCols; ++c) chk.near(got[c], ref[c] / s, 1e-3, 1e-9, "y", r, c);
  }
  return chk.finish();
}
