__device__ float helper_rsqrt(float x) { return 1.0f / sqrtf(x + 1.0f); }
