// Public interface of the stencil_kernels library: a 2D 5-point weighted Jacobi
// stencil on an n x n row-major float grid,
//   out[i][j] = 0.5 * in[i][j] + 0.125 * (in[i-1][j] + in[i+1][j] + in[i][j-1] + in[i][j+1])
// for interior cells; boundary cells (first/last row and column) are copied unchanged.
#pragma once

#include <cuda_runtime.h>

namespace stencil {

constexpr float kCenterWeight = 0.5f;
constexpr float kNeighborWeight = 0.125f;

// One Jacobi sweep in -> out (distinct device buffers). Returns the launch error
// (cudaGetLastError() after the launch); does not synchronize.
cudaError_t jacobi_step(const float* in, float* out, int n, cudaStream_t stream = 0);

// `iters` sweeps starting from `init` (never written), ping-ponging between buf_a
// and buf_b: sweep 1 reads init and writes buf_a, then buf_a -> buf_b -> buf_a ...
// Every call therefore does identical work. On success *result points to the
// buffer that holds the final grid. Returns the first launch error.
cudaError_t jacobi_run(const float* init, float* buf_a, float* buf_b, int n, int iters,
                       const float** result, cudaStream_t stream = 0);

}  // namespace stencil
