// Device helpers called across translation units (see include/device_math.h).
// Nothing here is inline or static on purpose: with separable compilation the
// kernels in compute.cu, reduce.cu and histogram.cu reach these functions only
// through the device linker.
#include "device_math.h"

namespace dm {

__device__ float soft_sat(float x) {
  x = fminf(fmaxf(x, -kSatLimit), kSatLimit);
  const float x2 = x * x;
  return x * (27.0f + x2) / (27.0f + 9.0f * x2);
}

__device__ float blend(float a, float b, float t) { return a + t * (b - a); }

__device__ float poly(float x) {
  float r = kPoly6;
  r = r * x + kPoly5;
  r = r * x + kPoly4;
  r = r * x + kPoly3;
  r = r * x + kPoly2;
  r = r * x + kPoly1;
  r = r * x + kPoly0;
  return r;
}

__device__ int bin_index(float x, float lo, float scale, int nbins) {
  float t = (x - lo) * scale;
  t = fminf(fmaxf(t, 0.0f), static_cast<float>(nbins - 1));
  return static_cast<int>(t);
}

}  // namespace dm
