// Times sgemm_kernel<true>, the fast path of biglib's gemm_small.cu (included unchanged, so that its kernel in an
// anonymous namespace is reachable), at run_landscape's sizes: C = A (M x K) * B (K x N), M = N = 2048, K = 1024,
// batch 1, alpha 1, beta 0; grid (N/128, M/128, 1), 256 threads. Inputs from biglib's fixed-seed hash (uniform,
// unit variance, as the landscape's normal inputs); 3 warm-up launches, then REPS (argv[1], default 400) launches
// between CUDA events. Prints time_ms (per launch), checksum (the sum of |C|, 6 significant digits: equivalent
// code prints the same line or one a unit off in the last digit) and PASS when 256 sampled entries of C match a
// double-precision CPU product, else FAIL.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gemm_small.cu"  // biglib/backend/hot; its biglib.h from biglib/backend/include

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                      \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

int main(int argc, char **argv) {
  const int M = 2048, N = 2048, K = 1024;
  const int reps = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 400;
  const float amp = 1.7320508f;  // uniform on [-sqrt(3), sqrt(3)): unit variance
  std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = biglib_uniform_f32(1, i, amp);
  for (size_t i = 0; i < b.size(); ++i) b[i] = biglib_uniform_f32(2, i, amp);
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  CHECK(cudaMalloc(&da, a.size() * sizeof(float)));  // cudaMalloc: 256-byte aligned, as the fast path needs
  CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0xff, c.size() * sizeof(float)));  // NaN: an entry the kernel does not write fails

  const dim3 grid(N / BN, M / BM, 1);
  for (int r = 0; r < 3; ++r) sgemm_kernel<true><<<grid, kThreads>>>(da, db, dc, M, N, K, 1.0f, 0.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0));
  for (int r = 0; r < reps; ++r) sgemm_kernel<true><<<grid, kThreads>>>(da, db, dc, M, N, K, 1.0f, 0.0f);
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  CHECK(cudaGetLastError());
  float ms = 0.f;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));

  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) sum += std::fabs((double)c[i]);

  // CPU reference on 256 entries spread over the block tiles and each thread's 8x8 register tile; the tolerance
  // 3e-5 * sum_k |a b| is far above fp32 rounding (~1e-6 of it here) and far below one missing or wrong term
  int bad = 0;
  double worst = 0;
  for (int t = 0; t < 256; ++t) {
    const uint32_t hsh = biglib_hash32(7, t);
    const int i = (int)(hsh % M), j = (int)((hsh >> 11) % N);
    double ref = 0, mag = 0;
    for (int kk = 0; kk < K; ++kk) {
      const double p = (double)a[(size_t)i * K + kk] * b[(size_t)kk * N + j];
      ref += p;
      mag += std::fabs(p);
    }
    const double err = std::fabs(c[(size_t)i * N + j] - ref);
    if (!(err <= 3e-5 * mag)) ++bad;  // NaN counts as bad
    worst = err > worst || err != err ? err : worst;
  }
  const bool pass = bad == 0 && std::isfinite(sum);
  if (!pass) std::fprintf(stderr, "%d of 256 sampled entries off the CPU reference (worst |error| %.3e)\n", bad, worst);
  std::printf("time_ms=%.5f\nchecksum=%.5e\n%s\n", ms / reps, sum, pass ? "PASS" : "FAIL");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return pass ? 0 : 1;
}
