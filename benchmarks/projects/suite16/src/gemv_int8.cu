// gemv_int8: y = scale[row] * (W_int8[row, :] . x) with W int8 [rows x 8192], per-row
// fp32 scales and fp32 x. One warp per row, 16-byte weight loads. --n = rows.
#include "bench_util.h"

namespace {
constexpr int kK = 8192;
constexpr int kWarpsPerBlock = 8;
constexpr int kInner = 20;
constexpr uint64_t kSeedW = 0x501, kSeedS = 0x502, kSeedX = 0x503;

__host__ __device__ inline int8_t weight_at(uint64_t idx) {
  return static_cast<int8_t>(static_cast<int>(bu::hash2(idx, kSeedW) % 255u) - 127);
}

__global__ void fill_weights(int8_t* w, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    w[i] = weight_at(i);
}

__device__ inline float dot4(int packed, const float4 x) {
  const char4 c = *reinterpret_cast<const char4*>(&packed);
  return fmaf(c.x, x.x, fmaf(c.y, x.y, fmaf(c.z, x.z, c.w * x.w)));
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const int8_t* __restrict__ W, const float* __restrict__ scale,
                const float* __restrict__ x, float* __restrict__ y, long long rows) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const int4* wr = reinterpret_cast<const int4*>(W + static_cast<size_t>(row) * kK);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc = 0.f;
#pragma unroll 4
  for (int i = lane; i < kK / 16; i += 32) {  // 16 weights per 16-byte load
    const int4 w = wr[i];
    acc += dot4(w.x, x4[4 * i]) + dot4(w.y, x4[4 * i + 1]) + dot4(w.z, x4[4 * i + 2]) +
           dot4(w.w, x4[4 * i + 3]);
  }
  acc = bu::warp_sum(acc);
  if (lane == 0) y[row] = acc * scale[row];
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 65536, 1, 262144);
  const long long rows = a.n;
  const size_t nw = static_cast<size_t>(rows) * kK;
  bu::DeviceBuffer<int8_t> W(nw);
  bu::DeviceBuffer<float> s(rows), x(kK), y(rows);
  fill_weights<<<1024, 256>>>(W.p, nw);
  CUDA_CHECK_LAUNCH();
  bu::fill(s.p, rows, kSeedS, 0.001f, 0.01f);
  bu::fill(x.p, kK, kSeedX, -1.0f, 1.0f);
  const unsigned grid = bu::grid_for(rows, kWarpsPerBlock);

  bu::time_launches([&] { gemv_kernel<<<grid, kWarpsPerBlock * 32>>>(W.p, s.p, x.p, y.p, rows); },
                    a.reps, kInner);

  bu::Checker chk;
  std::vector<float> got = y.to_host();
  std::vector<double> xh(kK);
  for (int k = 0; k < kK; ++k) xh[k] = bu::gen(k, kSeedX, -1.0f, 1.0f);
  for (long long r : bu::sample_indices(rows, 1024)) {
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < kK; ++k) {
      const double p = weight_at(static_cast<uint64_t>(r) * kK + k) * xh[k];
      ref += p;
      mag += std::fabs(p);
    }
    const double sc = bu::gen(r, kSeedS, 0.001f, 0.01f);
    chk.near(got[r], ref * sc, 1e-4, 1e-5 * mag * sc, "y", r);
  }
  return chk.finish();
}
