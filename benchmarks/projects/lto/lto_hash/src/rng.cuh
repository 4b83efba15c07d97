// RNG and hash helpers defined in rng.cu. kernels.cu only sees these declarations, so
// with relocatable device code each use is a real call across translation units
// unless device LTO inlines it at link time.
#pragma once
#include <cstdint>

extern __device__ std::uint64_t stream_seed(std::uint64_t i, std::uint32_t seed);  // splitmix64
extern __device__ std::uint64_t lcg_advance(std::uint64_t s);    // PCG32 state step
extern __device__ std::uint32_t pcg_output(std::uint64_t s);     // PCG32 XSH-RR output
extern __device__ std::uint32_t mix32(std::uint32_t h, std::uint32_t k);  // murmur3 block
extern __device__ std::uint32_t fmix32(std::uint32_t h);         // murmur3 finalizer
extern __device__ std::uint32_t in_quarter_disk(std::uint32_t r);  // 1 if inside, else 0
extern __device__ float to_unit(std::uint32_t r);                 // top 24 bits -> [0, 1)
