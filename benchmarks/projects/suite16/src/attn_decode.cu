// attn_decode: single-query attention decode step. For each (batch, head): scores =
// q . K[j] / sqrt(128) over a context of L cached keys, softmax, out = sum_j p_j V[j].
// K/V cache stored as fp16 [16 batch][32 heads][L][128], all math in fp32.
// One 256-thread block per (batch, head); scores staged in shared memory. --n = L.
#include <cuda_fp16.h>

#include "bench_util.h"

namespace {
constexpr int kBatch = 16, kHeads = 32, kDim = 128;
constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kInner = 16;
constexpr uint64_t kSeedQ = 0x301, kSeedK = 0x302, kSeedV = 0x303;

__global__ void fill_half_kernel(__half* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = __float2half_rn(bu::gen(i, seed, -1.0f, 1.0f));
}

// Loads 4 consecutive halves (8 bytes) as floats.
__device__ inline float4 load_half4(const __half* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

__global__ void __launch_bounds__(kThreads)
    attn_decode_kernel(const float* __restrict__ q, const __half* __restrict__ kc,
                       const __half* __restrict__ vc, float* __restrict__ out, int L) {
  extern __shared__ float scores[];  // L floats
  __shared__ float partial[kWarps][kDim];
  const int bh = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const size_t head_off = static_cast<size_t>(bh) * L * kDim;
  const __half* K = kc + head_off;
  const __half* V = vc + head_off;
  const float4 qv = reinterpret_cast<const float4*>(q + static_cast<size_t>(bh) * kDim)[lane];
  const float scale = rsqrtf(static_cast<float>(kDim));

  // scores: one warp per key, each lane covers 4 of the 128 dims; 4 keys in flight.
  for (int j0 = warp * 4; j0 < L; j0 += kWarps * 4) {
    float d[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int j = j0 + u;
      d[u] = 0.f;
      if (j < L) {
        const float4 kv = load_half4(K + static_cast<size_t>(j) * kDim + lane * 4);
        d[u] = qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const float s = bu::warp_sum(d[u]);
      if (lane == 0 && j0 + u < L) scores[j0 + u] = s * scale;
    }
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < L; j += kThreads) m = fmaxf(m, scores[j]);
  m = bu::block_max(m);
  float sum = 0.f;
  for (int j = threadIdx.x; j < L; j += kThreads) {
    const float p = expf(scores[j] - m);
    scores[j] = p;
    sum += p;
  }
  sum = bu::block_sum(sum);  // its barriers also publish the scores[] writes

  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int j = warp; j < L; j += kWarps) {
    const float p = scores[j];
    const float4 vv = load_half4(V + static_cast<size_t>(j) * kDim + lane * 4);
    acc.x = fmaf(p, vv.x, acc.x);
    acc.y = fmaf(p, vv.y, acc.y);
    acc.z = fmaf(p, vv.z, acc.z);
    acc.w = fmaf(p, vv.w, acc.w);
  }
  reinterpret_cast<float4*>(partial[warp])[lane] = acc;
  __syncthreads();
  if (threadIdx.x < kDim) {
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += partial[w][threadIdx.x];
    out[static_cast<size_t>(bh) * kDim + threadIdx.x] = o / sum;
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 4096, 1, 12288);
  const int L = static_cast<int>(a.n);
  const int heads = kBatch * kHeads;
  const size_t cache = static_cast<size_t>(heads) * L * kDim;
  bu::DeviceBuffer<float> q(static_cast<size_t>(heads) * kDim), out(static_cast<size_t>(heads) * kDim);
  bu::DeviceBuffer<__half> kc(cache), vc(cache);
  bu::fill(q.p, q.n, kSeedQ, -4.0f, 4.0f);
  fill_half_kernel<<<1024, 256>>>(kc.p, cache, kSeedK);
  CUDA_CHECK_LAUNCH();
  fill_half_kernel<<<1024, 256>>>(vc.p, cache, kSeedV);
  CUDA_CHECK_LAUNCH();
  const size_t smem = static_cast<size_t>(L) * sizeof(float);
  CUDA_CHECK(cudaFuncSetAttribute(attn_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));

  bu::time_launches([&] { attn_decode_kernel<<<heads, kThreads, smem>>>(q.p, kc.p, vc.p, out.p, L); },
                    a.reps, kInner);

  bu::Checker chk;
  std::vector<float> got = out.to_host();
  std::vector<double> s(L);
  for (long long bh : bu::sample_indices(heads, 32)) {
    std::vector<__half> kh = kc.slice(static_cast<size_t>(bh) * L * kDim, static_cast<size_t>(L) * kDim);
    std::vector<__half> vh = vc.slice(static_cast<size_t>(bh) * L * kDim, static_cast<size_t>(L) * kDim);
    double qh[kDim];
    for (int c = 0; c < kDim; ++c) qh[c] = bu::gen(bh * kDim + c, kSeedQ, -4.0f, 4.0f);
    double m = -1e300, sum = 0.0;
    for (int j = 0; j < L; ++j) {
      double d = 0.0;
      for (int c = 0; c < kDim; ++c) d += qh[c] * __half2float(kh[static_cast<size_t>(j) * kDim + c]);
      s[j] = d / std::sqrt(static_cast<double>(kDim));
      m = std::max(m, s[j]);
    }
    for (int j = 0; j < L; ++j) sum += (s[j] = std::exp(s[j] - m));
    for (int c = 0; c < kDim; ++c) {
      double o = 0.0;
      for (int j = 0; j < L; ++j) o += s[j] * __half2float(vh[static_cast<size_t>(j) * kDim + c]);
      chk.near(got[bh * kDim + c], o / sum, 1e-3, 2e-5, "out", bh, c);
    }
  }
  return chk.finish();
}
