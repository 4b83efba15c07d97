// A small device function called across translation units (relocatable device code): device LTO can inline it.
__device__ float soft_step(float x) { return x / (1.0f + fabsf(x)) + 0.25f * x; }
