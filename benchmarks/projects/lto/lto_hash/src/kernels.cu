// The two hot kernels and their host launcher.
#include "cuda_util.cuh"
#include "hashbench.h"
#include "rng.cuh"

// Hash chain over the PCG32 stream of each thread: 3 cross-TU calls per draw.
__global__ void hash_chain_kernel(std::uint32_t* __restrict__ digest, std::size_t n,
                                  std::uint32_t seed) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  std::uint64_t s = stream_seed(i, seed);
  std::uint32_t h = seed;
  for (int k = 0; k < kIters; ++k) {
    s = lcg_advance(s);
    h = mix32(h, pcg_output(s));
  }
  digest[i] = fmix32(h ^ (4u * kIters));
}

// Monte Carlo quarter-disk test and mean of the draws: 4 cross-TU calls per draw.
__global__ void monte_carlo_kernel(std::uint32_t* __restrict__ hits, float* __restrict__ mean,
                                   std::size_t n, std::uint32_t seed) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  std::uint64_t s = stream_seed(i, ~seed);
  std::uint32_t count = 0;
  float sum = 0.0f;
  for (int k = 0; k < kIters; ++k) {
    s = lcg_advance(s);
    const std::uint32_t r = pcg_output(s);
    count += in_quarter_disk(r);
    sum += to_unit(r);
  }
  hits[i] = count;
  mean[i] = sum * (1.0f / kIters);
}

double gpu_hashbench(std::size_t n, std::uint32_t seed, std::uint32_t* digest,
                     std::uint32_t* hits, float* mean, int reps) {
  std::uint32_t *d_digest, *d_hits;
  float* d_mean;
  CUDA_CHECK(cudaMalloc(&d_digest, n * sizeof(std::uint32_t)));
  CUDA_CHECK(cudaMalloc(&d_hits, n * sizeof(std::uint32_t)));
  CUDA_CHECK(cudaMalloc(&d_mean, n * sizeof(float)));

  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  const double ms = median_time_ms(
      [&] {
        hash_chain_kernel<<<grid, block>>>(d_digest, n, seed);
        CUDA_CHECK(cudaGetLastError());
        monte_carlo_kernel<<<grid, block>>>(d_hits, d_mean, n, seed);
        CUDA_CHECK(cudaGetLastError());
      },
      reps);

  CUDA_CHECK(cudaMemcpy(digest, d_digest, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hits, d_hits, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(mean, d_mean, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_digest));
  CUDA_CHECK(cudaFree(d_hits));
  CUDA_CHECK(cudaFree(d_mean));
  return ms;
}
