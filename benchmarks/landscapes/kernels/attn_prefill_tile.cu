// attn_prefill_tile: tiled (flash-style) causal self-attention forward, fp32.
//
// Q, K, V, out: float32 [H=16][S=1024][D=64]. out[h,i,:] = sum_{j<=i} softmax_j(q_i.k_j/8) v_j.
// Launch: grid (S/32 = 32 query tiles, H = 16), block 128 threads. A block owns 32 query rows;
// four consecutive threads (a "quad") share one query row, each holding 16 of the 64 dims of q
// and of the output accumulator (dims c*16 + t*4 .. +3, c = 0..3, so a quad reads 64 contiguous
// bytes of a shared row: no bank conflicts). Key/value tiles of 32 rows are staged in static
// shared memory (2 x 8 KiB). Per tile each thread computes the 32 scores (partial dots + two xor
// shuffles inside the quad) into registers, then does the online-softmax update once per tile:
// running max m and sum l in registers, one expf rescale, 32 expf for the probabilities.
// The diagonal tile is masked (key > query -> p = 0). Query tiles are walked from the last one
// (the most work) first.
// Bound: FMA issue and shared-memory load bandwidth (2.1 GFLOP, LDS.128 broadcasts), expf is ~1/16
// of the FMA count; register heavy (32 scores + 16 q + 16 acc live), so register caps spill.
// Default build (sm_90, -O3, nvcc 13.0): 127 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 0.27 ms; -maxrregcount=32 spills ~4 KB and runs ~1.0 ms.

#define AP_D 64
#define AP_S 1024
#define AP_BR 32     // query rows per block
#define AP_BC 32     // key rows per tile
#define AP_THREADS 128

extern "C" __global__ void attn_prefill_tile(const float* Q, const float* K, const float* V, float* out) {
    __shared__ __align__(16) float Ks[AP_BC][AP_D];
    __shared__ __align__(16) float Vs[AP_BC][AP_D];

    const int tid = threadIdx.x;
    const int t = tid & 3;         // position inside the quad
    const int r = tid >> 2;        // query row inside the tile, 0..31
    const int qt = gridDim.x - 1 - blockIdx.x;   // heaviest tiles first
    const int h = blockIdx.y;
    const int qrow = qt * AP_BR + r;

    const size_t head_off = (size_t)h * AP_S * AP_D;
    const float scale = 0.125f;    // 1/sqrt(64)

    float q[16], o[16];
    {
        const float* qp = Q + head_off + (size_t)qrow * AP_D + t * 4;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const float4 v = *reinterpret_cast<const float4*>(qp + c * 16);
            q[c * 4 + 0] = v.x * scale;
            q[c * 4 + 1] = v.y * scale;
            q[c * 4 + 2] = v.z * scale;
            q[c * 4 + 3] = v.w * scale;
        }
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) o[i] = 0.f;
    float m = -INFINITY;
    float l = 0.f;

    for (int kt = 0; kt <= qt; ++kt) {
        __syncthreads();   // previous tile fully consumed
        {
            const float* kp = K + head_off + (size_t)kt * AP_BC * AP_D;
            const float* vp = V + head_off + (size_t)kt * AP_BC * AP_D;
#pragma unroll
            for (int i = 0; i < (AP_BC * AP_D / 4) / AP_THREADS; ++i) {   // 4 float4 per thread
                const int idx = tid + i * AP_THREADS;   // 0..511
                const int row = idx >> 4;               // 16 float4 per row
                const int c4 = (idx & 15) * 4;
                *reinterpret_cast<float4*>(&Ks[row][c4]) =
                    *reinterpret_cast<const float4*>(kp + row * AP_D + c4);
                *reinterpret_cast<float4*>(&Vs[row][c4]) =
                    *reinterpret_cast<const float4*>(vp + row * AP_D + c4);
            }
        }
        __syncthreads();

        const bool diag = (kt == qt);
        float s[AP_BC];
#pragma unroll
        for (int j = 0; j < AP_BC; ++j) {
            float d = 0.f;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const float4 kv = *reinterpret_cast<const float4*>(&Ks[j][c * 16 + t * 4]);
                d = fmaf(q[c * 4 + 0], kv.x, d);
                d = fmaf(q[c * 4 + 1], kv.y, d);
                d = fmaf(q[c * 4 + 2], kv.z, d);
                d = fmaf(q[c * 4 + 3], kv.w, d);
            }
            d += __shfl_xor_sync(0xffffffffu, d, 1);
            d += __shfl_xor_sync(0xffffffffu, d, 2);
            s[j] = (diag && j > r) ? -INFINITY : d;
        }
        float mt = s[0];   // s[0] is never masked (key kt*32 <= query qt*32 + r)
#pragma unroll
        for (int j = 1; j < AP_BC; ++j) mt = fmaxf(mt, s[j]);
        const float m_new = fmaxf(m, mt);
        const float corr = expf(m - m_new);    // 0 on the first tile (m = -inf)
        l *= corr;
#pragma unroll
        for (int i = 0; i < 16; ++i) o[i] *= corr;
#pragma unroll
        for (int j = 0; j < AP_BC; ++j) {
            const float p = (diag && j > r) ? 0.f : expf(s[j] - m_new);
            l += p;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const float4 vv = *reinterpret_cast<const float4*>(&Vs[j][c * 16 + t * 4]);
                o[c * 4 + 0] = fmaf(p, vv.x, o[c * 4 + 0]);
                o[c * 4 + 1] = fmaf(p, vv.y, o[c * 4 + 1]);
                o[c * 4 + 2] = fmaf(p, vv.z, o[c * 4 + 2]);
                o[c * 4 + 3] = fmaf(p, vv.w, o[c * 4 + 3]);
            }
        }
        m = m_new;
    }

    const float inv_l = 1.0f / l;
    float* op = out + head_off + (size_t)qrow * AP_D + t * 4;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        float4 v;
        v.x = o[c * 4 + 0] * inv_l;
        v.y = o[c * 4 + 1] * inv_l;
        v.z = o[c * 4 + 2] * inv_l;
        v.w = o[c * 4 + 3] * inv_l;
        *reinterpret_cast<float4*>(op + c * 16) = v;
    }
}
