// attn_decode_f16: single-token (decode) attention over an fp16 K/V cache.
//
// Computes, for every (batch b, head h): out[b,h,:] = softmax(q.K^T / sqrt(128)) . V, with
// q float32 [B*H][128], K and V fp16 [B*H][S][128] (S = 4096), out float32 [B*H][128].
// Launch: grid (H=32, B=8) -> one block per (batch, head), block 256 threads (8 warps).
//   Phase 1: each half-warp owns one key per step (16 lanes x 8 halves = one 256-byte K row,
//            uint4 loads, 4 keys in flight per half-warp); dot product reduced with xor
//            shuffles inside the half-warp; scores kept in a 16 KiB static shared array.
//   Phase 2: block max, p = expf(s - max) written back in place, block sum (fixed order).
//   Phase 3: same half-warp-per-key walk over V, 8 fp32 accumulators per lane, then a fixed-order
//            cross-warp combine through shared memory.
// Bound: HBM bandwidth (K+V = 512 MiB read once, ~0.11 ms at 4.8 TB/s), with only 256 blocks
// (~2 per SM) so latency hiding depends on the unrolled loads; expf is minor (4096 per block).
// Default build (sm_90, -O3, nvcc 13.0): 38 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 0.16 ms.
#include <cuda_fp16.h>

#define AD_D 128          // head dim
#define AD_S 4096         // sequence length (cache length)
#define AD_THREADS 256
#define AD_WARPS (AD_THREADS / 32)
#define AD_UNROLL 4
#define AD_KEYS_PER_STEP (AD_WARPS * 2)   // two half-warps per warp

__device__ __forceinline__ void ad_unpack8(const uint4 v, float f[8]) {
    const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float2 t = __half22float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

extern "C" __global__ void attn_decode_f16(const float* q, const __half* kcache, const __half* vcache,
                                           float* out) {
    __shared__ float scores[AD_S];
    __shared__ float part[AD_WARPS][AD_D];
    __shared__ float red[AD_WARPS];
    __shared__ float bcast;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int half = lane >> 4;      // which key of the pair this half-warp handles
    const int sl = lane & 15;        // sub-lane: owns dims sl*8 .. sl*8+7
    const int bh = blockIdx.y * gridDim.x + blockIdx.x;

    const float scale = 0.08838834764831845f;  // 1/sqrt(128)
    float qf[8];
    {
        const float4* qp = reinterpret_cast<const float4*>(q + (size_t)bh * AD_D + sl * 8);
        float4 a = qp[0], b = qp[1];
        qf[0] = a.x * scale; qf[1] = a.y * scale; qf[2] = a.z * scale; qf[3] = a.w * scale;
        qf[4] = b.x * scale; qf[5] = b.y * scale; qf[6] = b.z * scale; qf[7] = b.w * scale;
    }

    const __half* kb = kcache + (size_t)bh * AD_S * AD_D;
    const __half* vb = vcache + (size_t)bh * AD_S * AD_D;

    // ---- phase 1: scores ----
    for (int base = 0; base < AD_S; base += AD_KEYS_PER_STEP * AD_UNROLL) {
        uint4 kv[AD_UNROLL];
#pragma unroll
        for (int u = 0; u < AD_UNROLL; ++u) {
            const int key = base + u * AD_KEYS_PER_STEP + warp * 2 + half;
            kv[u] = *reinterpret_cast<const uint4*>(kb + (size_t)key * AD_D + sl * 8);
        }
#pragma unroll
        for (int u = 0; u < AD_UNROLL; ++u) {
            float kf[8];
            ad_unpack8(kv[u], kf);
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 8; ++i) d = fmaf(qf[i], kf[i], d);
            d += __shfl_xor_sync(0xffffffffu, d, 8);
            d += __shfl_xor_sync(0xffffffffu, d, 4);
            d += __shfl_xor_sync(0xffffffffu, d, 2);
            d += __shfl_xor_sync(0xffffffffu, d, 1);
            const int key = base + u * AD_KEYS_PER_STEP + warp * 2 + half;
            if (sl == 0) scores[key] = d;
        }
    }
    __syncthreads();

    // ---- phase 2: softmax numerator and denominator ----
    float m = -INFINITY;
    for (int s = tid; s < AD_S; s += AD_THREADS) m = fmaxf(m, scores[s]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (tid == 0) {
        float mm = red[0];
        for (int w = 1; w < AD_WARPS; ++w) mm = fmaxf(mm, red[w]);
        bcast = mm;
    }
    __syncthreads();
    const float mx = bcast;
    float sum = 0.f;
    for (int s = tid; s < AD_S; s += AD_THREADS) {
        const float p = expf(scores[s] - mx);
        scores[s] = p;
        sum += p;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncthreads();   // everyone has read bcast / red before they are reused
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    if (tid == 0) {
        float ss = 0.f;
        for (int w = 0; w < AD_WARPS; ++w) ss += red[w];
        bcast = ss;
    }
    __syncthreads();
    const float inv_sum = 1.0f / bcast;

    // ---- phase 3: weighted sum of V ----
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.f;
    for (int base = 0; base < AD_S; base += AD_KEYS_PER_STEP * AD_UNROLL) {
        uint4 vv[AD_UNROLL];
#pragma unroll
        for (int u = 0; u < AD_UNROLL; ++u) {
            const int key = base + u * AD_KEYS_PER_STEP + warp * 2 + half;
            vv[u] = *reinterpret_cast<const uint4*>(vb + (size_t)key * AD_D + sl * 8);
        }
#pragma unroll
        for (int u = 0; u < AD_UNROLL; ++u) {
            const int key = base + u * AD_KEYS_PER_STEP + warp * 2 + half;
            const float p = scores[key];
            float vf[8];
            ad_unpack8(vv[u], vf);
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[i] = fmaf(p, vf[i], acc[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 16);
    if (half == 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) part[warp][sl * 8 + i] = acc[i];
    }
    __syncthreads();
    if (tid < AD_D) {
        float o = 0.f;
#pragma unroll
        for (int w = 0; w < AD_WARPS; ++w) o += part[w][tid];
        out[(size_t)bh * AD_D + tid] = o * inv_sum;
    }
}
