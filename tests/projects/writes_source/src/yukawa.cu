// ws_bench: all-pairs screened-Coulomb (Yukawa) potential of n particles.
// The default n comes from generated/config.h, written into the source tree by CMake.
#include <cmath>
#include <cstdio>
#include <vector>
#include "bench.h"
#include "generated/config.h"

constexpr int kTile = 256;
constexpr float kSoft2 = 1e-2f;     // softening^2
constexpr float kInvScreen = 2.0f;  // 1 / screening length

// phi_i = sum_j m_j * exp(-r_ij / lambda) / sqrt(r_ij^2 + eps^2)   (j != i)
__global__ void yukawa_kernel(const float4* __restrict__ body, float* __restrict__ phi, int n) {
  __shared__ float4 tile[kTile];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 bi = body[min(i, n - 1)];
  float acc = 0.0f;
  for (int base = 0; base < n; base += kTile) {
    int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? body[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
#pragma unroll 8
    for (int t = 0; t < kTile; ++t) {
      float4 bj = tile[t];
      float dx = bj.x - bi.x, dy = bj.y - bi.y, dz = bj.z - bi.z;
      float r2 = dx * dx + dy * dy + dz * dz;
      float r = sqrtf(r2);
      float term = bj.w * expf(-kInvScreen * r) / sqrtf(r2 + kSoft2);
      acc += (base + t == i) ? 0.0f : term;
    }
    __syncthreads();
  }
  if (i < n) phi[i] = acc;
}

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, WS_DEFAULT_N);
  const int n = args.n;

  std::vector<float> pos(3 * (size_t)n), mass(n);
  fill_uniform(pos, -4.0f, 4.0f, 21u);
  fill_uniform(mass, 0.5f, 1.5f, 22u);
  std::vector<float4> h_body(n);
  for (int i = 0; i < n; ++i) h_body[i] = make_float4(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], mass[i]);

  float4* d_body;
  float* d_phi;
  CK(cudaMalloc(&d_body, (size_t)n * sizeof(float4)));
  CK(cudaMalloc(&d_phi, (size_t)n * sizeof(float)));
  CK(cudaMemcpy(d_body, h_body.data(), (size_t)n * sizeof(float4), cudaMemcpyHostToDevice));

  auto step = [&]() { yukawa_kernel<<<(n + kTile - 1) / kTile, kTile>>>(d_body, d_phi, n); };
  std::vector<float> ms = time_reps(step, args.reps);
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_phi(n);
  CK(cudaMemcpy(h_phi.data(), d_phi, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 64)) {
    double ref = 0.0;
    const float4 bi = h_body[i];
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      double dx = h_body[j].x - bi.x, dy = h_body[j].y - bi.y, dz = h_body[j].z - bi.z;
      double r2 = dx * dx + dy * dy + dz * dz;
      ref += h_body[j].w * std::exp(-kInvScreen * std::sqrt(r2)) / std::sqrt(r2 + kSoft2);
    }
    if (!close_enough(h_phi[i], ref, 2e-3, 1e-3)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_phi[i], ref);
      ++bad;
    }
  }
  std::fprintf(stderr, "%s: n=%d (default %d)\n", WS_PROJECT_NAME, n, WS_DEFAULT_N);
  CK(cudaFree(d_body));
  CK(cudaFree(d_phi));
  return report(h_phi, bad);
}
