// Helper of record.py (always built with the default flags): sums (a - ref)^2 and ref^2 in double into
// acc[0], acc[1] (grid-stride loop, block reduction, one atomicAdd per block). A NaN or Inf in `a`
// makes acc[0] non-finite, which the recorder treats as an invalid result.
extern "C" __global__ void __launch_bounds__(256)
l2diff(unsigned long long n, const float* a, const float* ref, double* acc) {
  __shared__ double s_d[256], s_r[256];
  double d = 0.0, r = 0.0;
  for (unsigned long long k = blockIdx.x * 256ull + threadIdx.x; k < n; k += 256ull * gridDim.x) {
    const double x = a[k], y = ref[k];
    d += (x - y) * (x - y);
    r += y * y;
  }
  s_d[threadIdx.x] = d;
  s_r[threadIdx.x] = r;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) {
      s_d[threadIdx.x] += s_d[threadIdx.x + w];
      s_r[threadIdx.x] += s_r[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&acc[0], s_d[0]);
    atomicAdd(&acc[1], s_r[0]);
  }
}
