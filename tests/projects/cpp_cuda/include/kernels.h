// Host-callable entry points of the kernels in src/kernels_a.cpp and src/kernels_b.cpp.
#pragma once
#include <cuda_runtime.h>

// Gabor filter bank response of each input value (kernels_a.cpp).
void launch_gabor_bank(const float* in, float* out, int n, cudaStream_t s);
float gabor_bank_ref(float x);

// Power-law / normalisation series of each input value (kernels_b.cpp).
void launch_pow_series(const float* in, float* out, int n, cudaStream_t s);
float pow_series_ref(float x);
