// Host code of cpp_bench. Compiled as CUDA (it launches a kernel with <<<>>>).
#include <cmath>
#include <cstdio>
#include <vector>
#include "bench.h"
#include "kernels.h"

// Combines the two kernel outputs: out = a + 0.5 * b (runs in the timed sequence).
__global__ void combine_kernel(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 0.5f * b[i];
}

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 24);
  const int n = args.n;

  std::vector<float> h_in(n);
  fill_uniform(h_in, -1.0f, 1.0f, 7u);

  float *d_in, *d_a, *d_b, *d_out;
  CK(cudaMalloc(&d_in, n * sizeof(float)));
  CK(cudaMalloc(&d_a, n * sizeof(float)));
  CK(cudaMalloc(&d_b, n * sizeof(float)));
  CK(cudaMalloc(&d_out, n * sizeof(float)));
  CK(cudaMemcpy(d_in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256;
  auto step = [&]() {
    launch_gabor_bank(d_in, d_a, n, 0);
    launch_pow_series(d_in, d_b, n, 0);
    combine_kernel<<<(n + block - 1) / block, block>>>(d_a, d_b, d_out, n);
  };
  std::vector<float> ms = time_reps(step, args.reps);
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out(n);
  CK(cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 1024)) {
    float ref = gabor_bank_ref(h_in[i]) + 0.5f * pow_series_ref(h_in[i]);
    if (!close_enough(h_out[i], ref, 2e-3, 1e-4)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_out[i], ref);
      ++bad;
    }
  }
  CK(cudaFree(d_in));
  CK(cudaFree(d_a));
  CK(cudaFree(d_b));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
