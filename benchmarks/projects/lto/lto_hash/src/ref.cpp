// CPU reference of hash_chain_kernel and monte_carlo_kernel for a single thread.
#include "hashbench.h"

namespace {

std::uint64_t stream_seed(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One PCG32 step: advances the state and returns the XSH-RR output of the new state.
std::uint32_t pcg_next(std::uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  const std::uint32_t xorshifted = static_cast<std::uint32_t>(((s >> 18) ^ s) >> 27);
  const std::uint32_t rot = static_cast<std::uint32_t>(s >> 59);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

std::uint32_t rotl32(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

}  // namespace

std::uint32_t ref_digest(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t s = stream_seed(i, seed);
  std::uint32_t h = seed;
  for (int k = 0; k < kIters; ++k) {
    std::uint32_t b = pcg_next(s) * 0xCC9E2D51u;
    b = rotl32(b, 15) * 0x1B873593u;
    h = rotl32(h ^ b, 13) * 5u + 0xE6546B64u;
  }
  h ^= 4u * kIters;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

void ref_monte_carlo(std::uint64_t i, std::uint32_t seed, std::uint32_t* hits,
                     double* mean) {
  std::uint64_t s = stream_seed(i, ~seed);
  std::uint32_t count = 0;
  double sum = 0.0;
  for (int k = 0; k < kIters; ++k) {
    const std::uint32_t r = pcg_next(s);
    const double x = r & 0xFFFFu, y = r >> 16;  // exact in double
    count += x * x + y * y < 4294967296.0 ? 1u : 0u;
    sum += (r >> 8) * 0x1p-24;
  }
  *hits = count;
  *mean = sum / kIters;
}
