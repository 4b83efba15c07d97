// Device function defined in src/device_math.cu (needs relocatable device code).
#pragma once

// Smooth "soft-plus wave" term k of input x.
extern __device__ float wave_term(float x, int k);

// Host copy of the same math, for the CPU reference.
float wave_term_host(float x, int k);
