extern __device__ float helper_rsqrt(float x);
__global__ void scale_kernel(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * helper_rsqrt(in[i]) / (in[i] + 2.0f);
}
void launch_scale(float* out, const float* in, int n) { scale_kernel<<<(n + 255) / 256, 256>>>(out, in, n); }
