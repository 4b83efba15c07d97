// Landscape kernel "sgemm" (register-pressure-bound): C = A * B, row-major float, M = N = K = 2048.
// 128 x 128 block tiles, BK = 8, 256 threads, each thread accumulates an 8 x 8 block of C in registers
// (64 accumulators + 16 fragment registers): register caps (-maxrregcount, --register-usage-level)
// trade spills against occupancy, and --fmad=false doubles the inner-loop instructions.
// A tile is stored transposed in shared memory. Requires M, N multiples of 128 and K a multiple of 8
// (rows 16-byte aligned). Pointers are not __restrict__.
//
// Launch: grid (N / 128, M / 128), block 256.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

extern "C" __global__ void __launch_bounds__(256)
sgemm_128x128_8x8(int M, int N, int K, const float* A, const float* B, float* C) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int a_row = t / 2, a_col = (t % 2) * 4;
  const int b_row = t / 32, b_col = (t % 32) * 4;
  const float* Ap = A + static_cast<size_t>(bm + a_row) * K + a_col;
  const float* Bp = B + static_cast<size_t>(b_row) * N + bn + b_col;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  float a_frag[TM], b_frag[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 av = *reinterpret_cast<const float4*>(Ap + k0);
    const float4 bv = *reinterpret_cast<const float4*>(Bp + static_cast<size_t>(k0) * N);
    As[a_col + 0][a_row] = av.x;
    As[a_col + 1][a_row] = av.y;
    As[a_col + 2][a_row] = av.z;
    As[a_col + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = bv;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 a4 = *reinterpret_cast<const float4*>(&As[k][ty * TM + i]);
        a_frag[i] = a4.x; a_frag[i + 1] = a4.y; a_frag[i + 2] = a4.z; a_frag[i + 3] = a4.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 b4 = *reinterpret_cast<const float4*>(&Bs[k][tx * TN + j]);
        b_frag[j] = b4.x; b_frag[j + 1] = b4.y; b_frag[j + 2] = b4.z; b_frag[j + 3] = b4.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float* Cp = C + static_cast<size_t>(bm + ty * TM + i) * N + bn + tx * TN;
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      *reinterpret_cast<float4*>(Cp + j) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
  }
}
