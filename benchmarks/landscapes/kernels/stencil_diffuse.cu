// Landscape kernel "stencil" (memory-bound): one explicit step of variable-coefficient diffusion on an
// n x n float grid (8192^2), 5-point Laplacian, zero (Dirichlet) values outside the grid:
//   out[i][j] = u[i][j] + dt * kappa[i][j] * (u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1] - 4 u[i][j])
// One thread per column j walks ROWS consecutive rows keeping the north / centre / south values in
// registers (a sliding window), so each launch streams u, kappa and out once (~768 MB at 8192^2).
// Pointers are not __restrict__: without --restrict the compiler may not move the next row's loads above
// the store of this row (out might alias u).
//
// Launch: grid (ceil(n / 256), ceil(n / ROWS)), block 256.

#define ROWS 16

extern "C" __global__ void __launch_bounds__(256)
diffuse5(int n, float dt, const float* u, const float* kappa, float* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i0 = blockIdx.y * ROWS;
  if (j >= n || i0 >= n) return;
  float north = (i0 > 0) ? u[static_cast<size_t>(i0 - 1) * n + j] : 0.f;
  float centre = u[static_cast<size_t>(i0) * n + j];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int i = i0 + r;
    if (i >= n) break;
    const size_t idx = static_cast<size_t>(i) * n + j;
    const float south = (i + 1 < n) ? u[idx + n] : 0.f;
    const float west = (j > 0) ? u[idx - 1] : 0.f;
    const float east = (j + 1 < n) ? u[idx + 1] : 0.f;
    const float lap = north + south + west + east - 4.f * centre;
    out[idx] = centre + dt * kappa[idx] * lap;
    north = centre;
    centre = south;
  }
}
