// Index helpers defined in boundary.cu. stencil.cu only sees these declarations, so with
// relocatable device code each use is a real call across translation units unless
// device LTO inlines it at link time.
#pragma once

extern __device__ int clamp_coord(int v, int n);         // clamp v to [0, n-1]
extern __device__ int cell_index(int x, int y, int n);   // row-major index, clamp-to-edge
