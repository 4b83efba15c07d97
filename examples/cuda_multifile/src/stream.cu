// Memory-bound kernels: STREAM triad and a shared-memory tiled transpose.
#include "stream.h"

namespace stream {
namespace {

constexpr int kTriadBlock = 256;
constexpr int kTile = 32;      // transpose tile side
constexpr int kTileRows = 8;   // threadIdx.y extent; each thread moves kTile / kTileRows elements

__global__ void __launch_bounds__(kTriadBlock)
    triad_kernel(float* __restrict__ a, const float* __restrict__ b,
                 const float* __restrict__ c, float s, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    a[i] = b[i] + s * c[i];
  }
}

__global__ void __launch_bounds__(kTile * kTileRows)
    transpose_kernel(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[kTile][kTile + 1];  // +1: no bank conflicts on the column read

  // read a kTile x kTile tile of `in` (coalesced along cols)
  int x = blockIdx.x * kTile + threadIdx.x;  // input column
  int y = blockIdx.y * kTile + threadIdx.y;  // input row
  for (int j = 0; j < kTile; j += kTileRows) {
    if (x < cols && y + j < rows) {
      tile[threadIdx.y + j][threadIdx.x] = in[static_cast<std::size_t>(y + j) * cols + x];
    }
  }
  __syncthreads();

  // write it transposed (coalesced along rows of `out`, i.e. input rows)
  x = blockIdx.y * kTile + threadIdx.x;  // output column = input row
  y = blockIdx.x * kTile + threadIdx.y;  // output row = input column
  for (int j = 0; j < kTile; j += kTileRows) {
    if (x < rows && y + j < cols) {
      out[static_cast<std::size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}

}  // namespace

cudaError_t triad(float* a, const float* b, const float* c, float s, std::size_t n,
                  cudaStream_t st) {
  if (n == 0) return cudaSuccess;
  std::size_t blocks = (n + kTriadBlock - 1) / kTriadBlock;
  // cap the grid; the grid-stride loop covers the rest
  if (blocks > (std::size_t{1} << 20)) blocks = std::size_t{1} << 20;
  triad_kernel<<<static_cast<unsigned int>(blocks), kTriadBlock, 0, st>>>(a, b, c, s, n);
  return cudaGetLastError();
}

cudaError_t transpose(float* out, const float* in, int rows, int cols, cudaStream_t st) {
  if (rows <= 0 || cols <= 0) return cudaErrorInvalidValue;
  const unsigned int gx = static_cast<unsigned int>((cols + kTile - 1) / kTile);
  const unsigned int gy = static_cast<unsigned int>((rows + kTile - 1) / kTile);
  if (gy > 65535u) return cudaErrorInvalidValue;
  transpose_kernel<<<dim3(gx, gy), dim3(kTile, kTileRows), 0, st>>>(out, in, rows, cols);
  return cudaGetLastError();
}

}  // namespace stream
