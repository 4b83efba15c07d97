// Device function defined in kernels.cu and called from the kernel in main.cu
// (a call across translation units: relocatable device code).
#pragma once

// One step of the per-element recurrence; see reference.h for the same formula in double.
__device__ float mix_step(float x, float acc, int k);
