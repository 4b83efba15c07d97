// Parameters and host API of the hash/RNG benchmark. Plain C++: included by the
// g++-compiled .cpp files and by the nvcc-compiled .cu files.
#pragma once
#include <cstddef>
#include <cstdint>

constexpr int kIters = 256;  // PCG draws per thread in each kernel

// Runs both kernels for threads i in [0, n), reps timed repetitions after 2 warm-ups:
//   hash_chain_kernel:  digest[i] = murmur3-style hash over kIters PCG32 draws of stream i
//   monte_carlo_kernel: hits[i] = draws (x, y) = (low, high 16 bits) inside the quarter
//                       disk of radius 65536, mean[i] = mean of the draws as floats in [0, 1)
// Returns the median milliseconds per repetition (both kernels).
double gpu_hashbench(std::size_t n, std::uint32_t seed, std::uint32_t* digest,
                     std::uint32_t* hits, float* mean, int reps);

// CPU reference (ref.cpp) for thread i; mean in double precision.
std::uint32_t ref_digest(std::uint64_t i, std::uint32_t seed);
void ref_monte_carlo(std::uint64_t i, std::uint32_t seed, std::uint32_t* hits, double* mean);
