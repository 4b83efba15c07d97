// Entry points of the two kernel libraries used by libs_bench.
#pragma once
#include <cuda_runtime.h>

constexpr int kVols = 96;  // volatility grid points averaged per option

// Static library kern_static (src/static_kernels.cu): the heavy kernel.
// Black-Scholes call price averaged over a grid of volatilities.
void price_vol_averaged(const float* spot, const float* strike, const float* years,
                        float* price, int n, cudaStream_t s);
double price_vol_averaged_ref(float spot, float strike, float years);

// Object library kern_objects (src/object_kernels.cu): the light kernel.
// Normalises prices by spot: out = price / spot * 100.
extern "C" void normalize_prices(const float* price, const float* spot, float* out, int n,
                                 cudaStream_t s);
