// sgemm.cu: a plain tiled SGEMM, C = A * B (row-major, M = N = K multiple of 64).
// 64x64 block tile, BK = 16, 256 threads, each thread a 4x4 register tile.
#define TM 64
#define TN 64
#define TK 16
extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  __shared__ float As[TK][TM + 4];
  __shared__ float Bs[TK][TN];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += TK) {
    // 64x16 A tile and 16x64 B tile: 1024 elements each, 4 per thread
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int e = tid + l * 256;
      const int ar = e / TK, ak = e % TK;
      As[ak][ar] = A[(size_t)(row0 + ar) * K + k0 + ak];
      const int bk = e / TN, bc = e % TN;
      Bs[bk][bc] = B[(size_t)(k0 + bk) * N + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TK; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) C[(size_t)(row0 + ty * 4 + i) * N + col0 + tx + 16 * j] = acc[i][j];
}
