// attn.cu: attention-like forward, O = softmax(Q K^T / sqrt(d)) V, fp32, d = 64, no mask.
// One block per tile of 64 queries of one head; each thread owns one query row (q and the
// output accumulator in registers); K/V tiles of 64 rows are staged in shared memory and an
// online (streaming) softmax keeps a running max and sum.
#define D 64
#define BQ 64
#define BKV 64
extern "C" __global__ void __launch_bounds__(BQ)
attn_fwd(const float* __restrict__ Q, const float* __restrict__ Kt, const float* __restrict__ V,
         float* __restrict__ O, int L, float scale) {
  __shared__ float Ks[BKV][D + 1];
  __shared__ float Vs[BKV][D];
  const int h = blockIdx.y;
  const int qi = blockIdx.x * BQ + threadIdx.x;
  const size_t base = (size_t)h * L * D;
  float q[D], o[D];
#pragma unroll
  for (int d = 0; d < D; ++d) { q[d] = Q[base + (size_t)qi * D + d] * scale; o[d] = 0.f; }
  float m = -INFINITY, l = 0.f;
  for (int k0 = 0; k0 < L; k0 += BKV) {
    for (int e = threadIdx.x; e < BKV * D; e += BQ) {
      const int r = e / D, c = e % D;
      Ks[r][c] = Kt[base + (size_t)(k0 + r) * D + c];
      Vs[r][c] = V[base + (size_t)(k0 + r) * D + c];
    }
    __syncthreads();
    for (int j = 0; j < BKV; ++j) {
      float sc = 0.f;
#pragma unroll
      for (int d = 0; d < D; ++d) sc = fmaf(q[d], Ks[j][d], sc);
      const float mn = fmaxf(m, sc);
      const float corr = __expf(m - mn);
      const float p = __expf(sc - mn);
      l = l * corr + p;
#pragma unroll
      for (int d = 0; d < D; ++d) o[d] = fmaf(o[d], corr, p * Vs[j][d]);
      m = mn;
    }
    __syncthreads();
  }
  const float inv = 1.f / l;
#pragma unroll
  for (int d = 0; d < D; ++d) O[base + (size_t)qi * D + d] = o[d] * inv;
}
