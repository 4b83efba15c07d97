// The per-iteration math of slow_check's kernel: sinf, expf, powf, sqrtf and FMAs.
// Kept in its own translation unit so the call from main.cu is only inlined with device LTO.
#include "kernels.cuh"

__device__ float mix_step(float x, float acc, int k) {
  float t = fmaf(0.02f, (float)k, x);            // t in [0, 2]
  float s = sinf(fmaf(0.3f, acc, 1.5f * t - 1.0f)); // argument in about [-1, 3]
  float e = expf(-0.5f * s * s);                  // (0.6, 1]
  float p = powf(e + 0.25f, 0.75f);
  float r = sqrtf(fmaf(s, s, p));
  return fmaf(acc, 0.95f, 0.1f * r);
}
