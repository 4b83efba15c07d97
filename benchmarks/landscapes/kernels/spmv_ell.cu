// spmv_ell: y = A x for a sparse matrix in ELLPACK format.
//
// Design: ell_cols (int32) and ell_vals (float32) are stored column-major, entry k of row r at
// k * nrows + r, so consecutive threads (rows) read consecutive words: coalesced. One thread per row
// (256-thread blocks), a serial loop over the nnz_row slots with a gather x[col]. Rows shorter than
// nnz_row are padded with val = 0, col = row (valid index), as usual for ELL.
// Default size: nrows = ncols = 2^21 (scaled up from 2^20, which would take only ~0.06 ms),
// 32 slots per row: 256 MiB of indices+values streamed, x (8 MiB) gathered from L2 with a banded
// (+-4096) column pattern; ~0.12-0.15 ms on an H200: memory-bandwidth bound.
// Default build (-O3, sm_90): 40 registers (slot loop unrolled), 0 spill stores/loads, no stack
// Requirements: grid.x * 256 >= nrows; 0 <= col < len(x).

extern "C" __global__ void spmv_ell(const int* ell_cols, const float* ell_vals, const float* x,
                                    float* y, int nrows, int nnz_row)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) return;

    float sum = 0.0f;
    for (int k = 0; k < nnz_row; ++k) {
        const size_t idx = (size_t)k * (size_t)nrows + (size_t)row;
        const int c = ell_cols[idx];
        sum += ell_vals[idx] * x[c];
    }
    y[row] = sum;
}
