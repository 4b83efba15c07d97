// fp8_quant: fake fp8 (E4M3) quantize -> dequantize round trip of an fp32 tensor with
// one power-of-two scale per 128-element block (MX-style): scale = 2^k chosen so the
// block's absmax fits under 448; each value is rounded to the E4M3 grid (3 mantissa
// bits, round-half-even, subnormals below 2^-6) and multiplied back. One warp per block.
// Outputs: y (fp32, dequantized) and the per-block exponent k. --n = elements.
#include "bench_util.h"

namespace {
constexpr int kBlock = 128;
constexpr int kWarpsPerCta = 8;
constexpr int kInner = 20;
constexpr uint64_t kSeed = 0x601;

// Shared by the kernel and the CPU reference: only exact operations (frexp, ldexp, rint),
// so results are bit-identical whatever the math flags.
__host__ __device__ inline int block_exponent(float amax) {
  if (!(amax > 0.f)) return 0;
  int e;
  const float m = frexpf(amax, &e);  // amax = m * 2^e, m in [0.5, 1)
  return (m > 0.875f) ? e - 8 : e - 9;  // amax * 2^-k in (224, 448]
}
__host__ __device__ inline float e4m3_round(float v) {  // |v| <= 448
  if (v == 0.f) return 0.f;
  int e;
  frexpf(v, &e);                      // |v| in [2^(e-1), 2^e)
  const int E = e - 1 < -6 ? -6 : e - 1;  // E4M3 minimum normal exponent is -6
  return ldexpf(rintf(ldexpf(v, 3 - E)), E - 3);
}

// Power-of-two magnitude of input block b, 2^-12 .. 2^12 (multiplying by it is exact).
__host__ __device__ inline float block_mag(long long b) {
  return ldexpf(1.0f, static_cast<int>(bu::hash2(b, 0x602) % 25) - 12);
}
__global__ void scale_blocks(float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] *= block_mag(i / kBlock);
}

__global__ void __launch_bounds__(kWarpsPerCta * 32)
    fp8_kernel(const float* __restrict__ x, float* __restrict__ y, int* __restrict__ kexp, long long n) {
  const long long blk = static_cast<long long>(blockIdx.x) * kWarpsPerCta + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const long long base = blk * kBlock;
  if (base >= n) return;
  float v[4];
  float amax = 0.f;
  const bool full = base + kBlock <= n;
  if (full) {
    const float4 t = reinterpret_cast<const float4*>(x + base)[lane];
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const long long i = base + lane * 4 + c;
      v[c] = i < n ? x[i] : 0.f;
    }
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) amax = fmaxf(amax, fabsf(v[c]));
  amax = bu::warp_max(amax);
  const int k = block_exponent(amax);
#pragma unroll
  for (int c = 0; c < 4; ++c) v[c] = ldexpf(e4m3_round(ldexpf(v[c], -k)), k);
  if (full) {
    reinterpret_cast<float4*>(y + base)[lane] = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const long long i = base + lane * 4 + c;
      if (i < n) y[i] = v[c];
    }
  }
  if (lane == 0) kexp[blk] = k;
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 64LL << 20, 1, 1LL << 28);
  const long long n = a.n;
  const long long nblk = (n + kBlock - 1) / kBlock;
  bu::DeviceBuffer<float> x(n), y(n);
  bu::DeviceBuffer<int> kexp(nblk);
  // Per-block magnitude varies over 2^-12..2^12 so the scales differ between blocks.
  bu::fill(x.p, n, kSeed, -1.0f, 1.0f);
  scale_blocks<<<1024, 256>>>(x.p, n);
  CUDA_CHECK_LAUNCH();
  const unsigned grid = bu::grid_for(nblk, kWarpsPerCta);

  bu::time_launches([&] { fp8_kernel<<<grid, kWarpsPerCta * 32>>>(x.p, y.p, kexp.p, n); }, a.reps, kInner);

  // Check 8192 sampled blocks: bit-exact against the same algorithm on the CPU, and
  // independently that every output is within half an E4M3 step of its input.
  bu::Checker chk;
  std::vector<int> kg = kexp.to_host();
  for (long long b : bu::sample_indices(nblk, 8192)) {
    const long long lo = b * kBlock, cnt = std::min<long long>(kBlock, n - lo);
    std::vector<float> got = y.slice(lo, cnt);
    std::vector<float> xin(cnt);
    float amax = 0.f;
    for (long long c = 0; c < cnt; ++c) {
      xin[c] = bu::gen(lo + c, kSeed, -1.0f, 1.0f) * block_mag(b);
      amax = std::max(amax, std::fabs(xin[c]));
    }
    const int k = block_exponent(amax);
    chk.exact(kg[b], k, "k", b);
    for (long long c = 0; c < cnt; ++c) {
      const float ref = std::ldexp(e4m3_round(std::ldexp(xin[c], -k)), k);
      chk.exact(got[c], ref, "y", lo + c);
      const double half_step = std::max(std::fabs(xin[c]) / 16.0, std::ldexp(1.0, k - 10));
      if (!(std::fabs(got[c] - xin[c]) <= half_step)) chk.fail("output farther than half an E4M3 step from input");
    }
  }
  return chk.finish();
}
