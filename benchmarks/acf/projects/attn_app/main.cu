// Times attn_fwd (the ACF landscape's attention kernel, ../../kernels/attn.cu) at run_landscape's sizes:
// H = 8 heads of L = 2048 queries and keys, d = D = 64, scale 1/8; grid (L/64, H), 64 threads per block.
// Inputs from a fixed-seed hash (uniform, unit variance, as the landscape's normal inputs); 3 warm-up launches,
// then REPS (argv[1], default 100) launches between CUDA events. Prints time_ms (per launch), checksum (the sum
// of |O|, 6 significant digits: equivalent code prints the same line or one a unit off in the last digit) and
// PASS when 16 sampled query rows (1024 outputs) match a double-precision CPU softmax(QK^T/8)V, else FAIL.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "attn.cu"  // defines D (64), BQ and BKV

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                      \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

// Uniform on [-sqrt(3), sqrt(3)) (unit variance) from a splitmix64 hash of (seed, i).
static float urand(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return 1.7320508f * ((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

int main(int argc, char **argv) {
  const int L = 2048, H = 8;
  const int reps = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 100;
  const float scale = 1.0f / 8.0f;  // 1 / sqrt(D)
  const size_t total = (size_t)H * L * D, bytes = total * sizeof(float);
  std::vector<float> q(total), k(total), v(total), o(total);
  for (size_t i = 0; i < total; ++i) {
    q[i] = urand(1, i);
    k[i] = urand(2, i);
    v[i] = urand(3, i);
  }
  float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
  CHECK(cudaMalloc(&dq, bytes));
  CHECK(cudaMalloc(&dk, bytes));
  CHECK(cudaMalloc(&dv, bytes));
  CHECK(cudaMalloc(&dout, bytes));
  CHECK(cudaMemcpy(dq, q.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dk, k.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, v.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dout, 0xff, bytes));  // NaN: an output the kernel does not write fails the check

  const dim3 grid(L / BQ, H), block(BQ);
  for (int r = 0; r < 3; ++r) attn_fwd<<<grid, block>>>(dq, dk, dv, dout, L, scale);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  for (int r = 0; r < reps; ++r) attn_fwd<<<grid, block>>>(dq, dk, dv, dout, L, scale);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  CHECK(cudaGetLastError());
  float ms = 0.f;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaMemcpy(o.data(), dout, bytes, cudaMemcpyDeviceToHost));

  double sum = 0;
  for (size_t i = 0; i < total; ++i) sum += std::fabs((double)o[i]);

  // CPU reference on 16 query rows: every head twice, rows spread over the query tiles and the threads
  int bad = 0;
  double worst = 0;
  std::vector<double> s(L);
  for (int t = 0; t < 16; ++t) {
    const int h = t % H, qi = (t * 977 + 31) % L;
    const size_t base = (size_t)h * L * D;
    const float *qr = &q[base + (size_t)qi * D];
    double mx = -INFINITY;
    for (int j = 0; j < L; ++j) {
      double dot = 0;
      for (int d = 0; d < D; ++d) dot += (double)qr[d] * k[base + (size_t)j * D + d];
      s[j] = dot * scale;
      mx = s[j] > mx ? s[j] : mx;
    }
    double l = 0, acc[D] = {};
    for (int j = 0; j < L; ++j) {
      const double p = std::exp(s[j] - mx);
      l += p;
      for (int d = 0; d < D; ++d) acc[d] += p * v[base + (size_t)j * D + d];
    }
    for (int d = 0; d < D; ++d) {
      const double ref = acc[d] / l, got = o[base + (size_t)qi * D + d];
      const double err = std::fabs(got - ref);
      if (!(err <= 2e-4 + 1e-3 * std::fabs(ref))) ++bad;  // NaN counts as bad
      worst = err > worst || err != err ? err : worst;
    }
  }
  const bool pass = bad == 0 && std::isfinite(sum);
  if (!pass) std::fprintf(stderr, "%d of 1024 sampled outputs off the CPU reference (worst |error| %.3e)\n", bad, worst);
  std::printf("time_ms=%.5f\nchecksum=%.5e\n%s\n", ms / reps, sum, pass ? "PASS" : "FAIL");
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  return pass ? 0 : 1;
}
