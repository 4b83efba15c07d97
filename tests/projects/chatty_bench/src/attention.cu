// chatty_bench: single-head attention with a tiny head dimension and an online
// (streaming) softmax over all keys, one query per thread.
#include <cmath>
#include <cstdio>
#include <vector>
#include "bench.h"

constexpr int kKeys = 8192;  // number of keys/values
constexpr int kTile = 256;
constexpr float kScale = 0.5f;  // 1 / sqrt(head dim 4)

// q, k: float4 per query/key; v: one float per key. out_i = softmax(q_i . K) . v
__global__ void attention_kernel(const float4* __restrict__ q, const float4* __restrict__ k,
                                 const float* __restrict__ v, float* __restrict__ out, int n) {
  __shared__ float4 ks[kTile];
  __shared__ float vs[kTile];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 qi = q[min(i, n - 1)];
  float m = -INFINITY, l = 0.0f, acc = 0.0f;
  for (int base = 0; base < kKeys; base += kTile) {
    ks[threadIdx.x] = k[base + threadIdx.x];
    vs[threadIdx.x] = v[base + threadIdx.x];
    __syncthreads();
#pragma unroll 4
    for (int t = 0; t < kTile; ++t) {
      float4 kj = ks[t];
      float s = kScale * (qi.x * kj.x + qi.y * kj.y + qi.z * kj.z + qi.w * kj.w);
      float m_new = fmaxf(m, s);
      float corr = expf(m - m_new);
      float p = expf(s - m_new);
      l = l * corr + p;
      acc = acc * corr + p * vs[t];
      m = m_new;
    }
    __syncthreads();
  }
  if (i < n) out[i] = acc / l;
}

static double attention_ref(const float4& qi, const std::vector<float4>& k,
                            const std::vector<float>& v) {
  std::vector<double> s(kKeys);
  double m = -1e300;
  for (int j = 0; j < kKeys; ++j) {
    s[j] = kScale * ((double)qi.x * k[j].x + (double)qi.y * k[j].y + (double)qi.z * k[j].z +
                     (double)qi.w * k[j].w);
    m = std::max(m, s[j]);
  }
  double l = 0.0, acc = 0.0;
  for (int j = 0; j < kKeys; ++j) {
    double p = std::exp(s[j] - m);
    l += p;
    acc += p * v[j];
  }
  return acc / l;
}

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 20);
  const int n = args.n;

  std::vector<float> qf(4 * (size_t)n), kf(4 * (size_t)kKeys), h_v(kKeys);
  fill_uniform(qf, -2.0f, 2.0f, 31u);
  fill_uniform(kf, -2.0f, 2.0f, 32u);
  fill_uniform(h_v, -1.0f, 1.0f, 33u);
  std::vector<float4> h_q(n), h_k(kKeys);
  for (int i = 0; i < n; ++i) h_q[i] = make_float4(qf[4 * i], qf[4 * i + 1], qf[4 * i + 2], qf[4 * i + 3]);
  for (int j = 0; j < kKeys; ++j) h_k[j] = make_float4(kf[4 * j], kf[4 * j + 1], kf[4 * j + 2], kf[4 * j + 3]);
  for (int j = 0; j < kKeys; ++j) h_v[j] += 0.5f;  // values in [-0.5, 1.5): outputs away from 0

  float4 *d_q, *d_k;
  float *d_v, *d_out;
  CK(cudaMalloc(&d_q, (size_t)n * sizeof(float4)));
  CK(cudaMalloc(&d_k, (size_t)kKeys * sizeof(float4)));
  CK(cudaMalloc(&d_v, (size_t)kKeys * sizeof(float)));
  CK(cudaMalloc(&d_out, (size_t)n * sizeof(float)));
  CK(cudaMemcpy(d_q, h_q.data(), (size_t)n * sizeof(float4), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_k, h_k.data(), (size_t)kKeys * sizeof(float4), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_v, h_v.data(), (size_t)kKeys * sizeof(float), cudaMemcpyHostToDevice));

  auto step = [&]() { attention_kernel<<<(n + kTile - 1) / kTile, kTile>>>(d_q, d_k, d_v, d_out, n); };
  std::vector<float> ms = time_reps(step, args.reps);
  for (size_t r = 0; r < ms.size(); ++r) std::printf("step %zu time_ms=%.6f\n", r, ms[r]);
  std::printf("summary time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out(n);
  CK(cudaMemcpy(h_out.data(), d_out, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 128)) {
    double ref = attention_ref(h_q[i], h_k, h_v);
    if (!close_enough(h_out[i], ref, 2e-3, 1e-3)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_out[i], ref);
      ++bad;
    }
  }
  CK(cudaFree(d_q));
  CK(cudaFree(d_k));
  CK(cudaFree(d_v));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
