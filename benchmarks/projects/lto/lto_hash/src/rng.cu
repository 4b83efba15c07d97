// Small integer helpers, called 3-4 times per draw by the kernels in kernels.cu.
#include "rng.cuh"

__device__ std::uint64_t stream_seed(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ std::uint64_t lcg_advance(std::uint64_t s) {
  return s * 6364136223846793005ull + 1442695040888963407ull;
}

__device__ std::uint32_t pcg_output(std::uint64_t s) {
  const std::uint32_t xorshifted = static_cast<std::uint32_t>(((s >> 18) ^ s) >> 27);
  const std::uint32_t rot = static_cast<std::uint32_t>(s >> 59);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

__device__ std::uint32_t mix32(std::uint32_t h, std::uint32_t k) {
  k *= 0xCC9E2D51u;
  k = (k << 15) | (k >> 17);
  k *= 0x1B873593u;
  h ^= k;
  h = (h << 13) | (h >> 19);
  return h * 5u + 0xE6546B64u;
}

__device__ std::uint32_t fmix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

__device__ std::uint32_t in_quarter_disk(std::uint32_t r) {
  const std::uint64_t x = r & 0xFFFFu, y = r >> 16;
  return x * x + y * y < (1ull << 32) ? 1u : 0u;
}

__device__ float to_unit(std::uint32_t r) {
  return static_cast<float>(r >> 8) * 0x1p-24f;
}
