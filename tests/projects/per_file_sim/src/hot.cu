extern "C" __global__ void hot_kernel(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = in[i];
    for (int k = 0; k < 64; ++k) x = sinf(x) * 0.9f + expf(-x * x) * 0.1f;
    out[i] = x;
  }
}
