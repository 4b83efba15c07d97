// Device helpers of the static library, called across translation units.
__device__ float lib_mix(float x, float y) { return fmaf(x, 0.75f, y * 0.25f); }
__device__ float lib_clamp(float x) { return fminf(fmaxf(x, -8.0f), 8.0f); }
