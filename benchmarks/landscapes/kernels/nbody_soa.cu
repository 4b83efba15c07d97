// Landscape kernel "nbody" (math-heavy): all-pairs softened gravity, float, structure-of-arrays inputs,
// no shared memory, the j range split into slices (blockIdx.y) so that 32768 bodies fill an H200
// (grid 256 x 8 blocks of 128 threads, 4096 interactions per thread).
//
// Each thread writes the partial acceleration and potential of body i over slice s to
// out[(c * slices + s) * n + i] for c = 0..3 (ax, ay, az, pot); inputs are never written, so every
// launch does identical work. The inner loop uses 1.0f / sqrtf(r2) on purpose: IEEE division and square
// root are multi-instruction sequences by default, approximations under --use_fast_math,
// --prec-div=false, --prec-sqrt=false. Pointers are not __restrict__ (so --restrict and the load cache
// operator matter: every thread of a warp reads the same body j).
//
// Launch: grid (ceil(n / 128), slices), block 128; slice_len = ceil(n / slices).

extern "C" __global__ void __launch_bounds__(128)
nbody_forces(int n, int slice_len, float eps2, const float* px, const float* py, const float* pz,
             const float* mass, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int s = blockIdx.y;
  const int slices = gridDim.y;
  if (i >= n) return;
  const float xi = px[i], yi = py[i], zi = pz[i];
  float ax = 0.f, ay = 0.f, az = 0.f, pot = 0.f;
  const int j0 = s * slice_len;
  const int j1 = min(n, j0 + slice_len);
  for (int j = j0; j < j1; ++j) {
    const float dx = px[j] - xi;
    const float dy = py[j] - yi;
    const float dz = pz[j] - zi;
    const float r2 = dx * dx + dy * dy + dz * dz + eps2;
    const float inv = 1.0f / sqrtf(r2);
    const float mi = mass[j] * inv;
    const float s3 = mi * inv * inv;
    ax += dx * s3;
    ay += dy * s3;
    az += dz * s3;
    pot -= mi;
  }
  const size_t plane = static_cast<size_t>(slices) * n;
  const size_t o = static_cast<size_t>(s) * n + i;
  out[o] = ax;
  out[plane + o] = ay;
  out[2 * plane + o] = az;
  out[3 * plane + o] = pot;
}
