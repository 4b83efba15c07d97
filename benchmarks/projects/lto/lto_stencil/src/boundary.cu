// Clamp-to-edge boundary handling: cell_index is called for every tap by stencil.cu.
#include "boundary.cuh"

__device__ int clamp_coord(int v, int n) {
  return min(max(v, 0), n - 1);
}

__device__ int cell_index(int x, int y, int n) {
  return clamp_coord(y, n) * n + clamp_coord(x, n);
}
