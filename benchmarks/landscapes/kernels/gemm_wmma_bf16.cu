// gemm_wmma_bf16: C = A . W^T on tensor cores (nvcuda::wmma), bf16 inputs, fp32 accumulate/output.
//
// A bf16 [M][K] row-major (activations), W bf16 [N][K] row-major (a Linear layer's weight, so B = W^T
// is read as a col-major matrix_b), C float32 [M][N], M = N = K = 4096 (multiples of 64; no edge
// handling). Launch: grid (N/64, M/64) = (64, 64), block 128 threads = 4 warps in a 2x2 arrangement,
// each warp owning a 32x32 sub-tile = 2x2 wmma 16x16x16 fragments. The K loop steps by 32 with a
// register prefetch of the next A/W tiles (2 + 2 uint4 per thread) while the current ones in static
// shared memory (A 64x40, W 64x40, padded, 10 KiB) feed the mma.
// Bound: smaller tiles than gemm_wmma_f16 -> twice the global/L2 and shared traffic per FLOP;
// shared-memory and L2 bandwidth plus tensor-core issue, 137 GFLOP.
// Default build (sm_90, -O3, nvcc 13.0): 96 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 1.09 ms (~125 TFLOP/s); -maxrregcount=32 spills, ~12 ms.
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

#define GB_BM 64
#define GB_BN 64
#define GB_BK 32
#define GB_LD (GB_BK + 8)    // 40 elements = 80 bytes per row
#define GB_THREADS 128

extern "C" __global__ void gemm_wmma_bf16(const __nv_bfloat16* A, const __nv_bfloat16* W, float* C,
                                          int M, int N, int K) {
    __shared__ __align__(128) __nv_bfloat16 As[GB_BM][GB_LD];
    __shared__ __align__(128) __nv_bfloat16 Ws[GB_BN][GB_LD];

    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int warp_m = warp >> 1;   // 0..1 -> rows warp_m*32
    const int warp_n = warp & 1;    // 0..1 -> cols warp_n*32
    const int bm = blockIdx.y * GB_BM;
    const int bn = blockIdx.x * GB_BN;

    // Two 16-byte chunks (8 elements) of each 64x32 tile per thread; A and W tiles share the layout.
    int l_row[2], l_col[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int idx = tid + i * GB_THREADS;   // 0..255
        l_row[i] = idx >> 2;                    // 4 chunks per 32-wide row
        l_col[i] = (idx & 3) * 8;
    }

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    uint4 ra[2], rw[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        ra[i] = *reinterpret_cast<const uint4*>(A + (size_t)(bm + l_row[i]) * K + l_col[i]);
        rw[i] = *reinterpret_cast<const uint4*>(W + (size_t)(bn + l_row[i]) * K + l_col[i]);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        *reinterpret_cast<uint4*>(&As[l_row[i]][l_col[i]]) = ra[i];
        *reinterpret_cast<uint4*>(&Ws[l_row[i]][l_col[i]]) = rw[i];
    }
    __syncthreads();

    for (int k0 = 0; k0 < K; k0 += GB_BK) {
        const bool more = (k0 + GB_BK) < K;
        if (more) {
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                ra[i] = *reinterpret_cast<const uint4*>(A + (size_t)(bm + l_row[i]) * K + k0 + GB_BK + l_col[i]);
                rw[i] = *reinterpret_cast<const uint4*>(W + (size_t)(bn + l_row[i]) * K + k0 + GB_BK + l_col[i]);
            }
        }
#pragma unroll
        for (int kk = 0; kk < GB_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &As[warp_m * 32 + i * 16][kk], GB_LD);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &Ws[warp_n * 32 + j * 16][kk], GB_LD);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
        if (more) {
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                *reinterpret_cast<uint4*>(&As[l_row[i]][l_col[i]]) = ra[i];
                *reinterpret_cast<uint4*>(&Ws[l_row[i]][l_col[i]]) = rw[i];
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            float* cp = C + (size_t)(bm + warp_m * 32 + i * 16) * N + bn + warp_n * 32 + j * 16;
            wmma::store_matrix_sync(cp, acc[i][j], N, wmma::mem_row_major);
        }
}
