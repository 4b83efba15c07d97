// Host code and kernel of sep_bench; the kernel calls wave_term() from device_math.cu.
#include <cstdio>
#include <vector>
#include "bench.h"
#include "device_math.cuh"

constexpr int kTerms = 96;

__global__ void wave_sum_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float acc = 0.0f;
  for (int k = 0; k < kTerms; ++k) acc += wave_term(x, k);
  out[i] = acc;
}

static float wave_sum_ref(float x) {
  float acc = 0.0f;
  for (int k = 0; k < kTerms; ++k) acc += wave_term_host(x, k);
  return acc;
}

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 24);
  const int n = args.n;

  std::vector<float> h_in(n);
  fill_uniform(h_in, -2.0f, 2.0f, 5u);

  float *d_in, *d_out;
  CK(cudaMalloc(&d_in, (size_t)n * sizeof(float)));
  CK(cudaMalloc(&d_out, (size_t)n * sizeof(float)));
  CK(cudaMemcpy(d_in, h_in.data(), (size_t)n * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256;
  auto step = [&]() { wave_sum_kernel<<<(n + block - 1) / block, block>>>(d_in, d_out, n); };
  std::vector<float> ms = time_reps(step, args.reps);
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out(n);
  CK(cudaMemcpy(h_out.data(), d_out, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 1024)) {
    float ref = wave_sum_ref(h_in[i]);
    if (!close_enough(h_out[i], ref, 2e-3, 1e-4)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_out[i], ref);
      ++bad;
    }
  }
  CK(cudaFree(d_in));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
