// triad.cu: memory-bound fused triad + reduction: y = a*x + b*z, partial[block] = sum(y*y).
// Grid-stride loop, float4 loads, one partial sum per block (the host sums the partials).
extern "C" __global__ void __launch_bounds__(256)
triad_reduce(const float4* __restrict__ x, const float4* __restrict__ z, float4* __restrict__ y,
             float* __restrict__ partial, float a, float b, int n4) {
  __shared__ float red[8];
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    const float4 xv = x[i], zv = z[i];
    float4 v;
    v.x = fmaf(a, xv.x, b * zv.x); v.y = fmaf(a, xv.y, b * zv.y);
    v.z = fmaf(a, xv.z, b * zv.z); v.w = fmaf(a, xv.w, b * zv.w);
    y[i] = v;
    s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < 8 ? red[threadIdx.x] : 0.f;
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
  }
}
