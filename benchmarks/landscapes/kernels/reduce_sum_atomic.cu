// reduce_sum_atomic: sum of n float32 values.
//
// Design: grid-stride float4 loads (fixed grid of gridDim.x blocks x 256 threads), warp-shuffle
// reduction, block reduction of the warp sums through static shared memory, then thread 0 of each
// block writes its partial to out[1 + blockIdx.x] and does ONE float atomicAdd into a module-scope
// __device__ accumulator. The output buffer is NaN-filled before the checked launch and launches
// must be idempotent, so the atomics cannot target out[0] directly: a ticket counter (threadfence
// reduction pattern) finds the last block to finish, which reads-and-clears the accumulator with
// atomicExch, writes out[0] = total, and resets the ticket to 0 for the next launch. Consequently
// launches of one loaded module must not run concurrently (ordinary stream order is fine).
// out[0] depends on the atomic order (float rounding only); the per-block partials are deterministic.
// Default size: n = 2^27 (512 MiB read), 1024 x 256 threads, 128 float4 per thread; ~0.11-0.13 ms on
// an H200: memory-bandwidth bound; 1024 global atomics are negligible.
// Default build (-O3, sm_90): 32 registers, 0 spill stores/loads, no stack; 128 B static shared
// Requirements: blockDim.x a multiple of 32 (<= 1024), out_count = 1 + gridDim.x.

__device__ float g_reduce_acc = 0.0f;
__device__ unsigned int g_reduce_ticket = 0u;

extern "C" __global__ void reduce_sum_atomic(const float* in, float* out, int n)
{
    const unsigned int full = 0xffffffffu;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int nwarps = blockDim.x >> 5;

    const float4* in4 = reinterpret_cast<const float4*>(in);
    const int n4 = n >> 2;
    const int stride = gridDim.x * blockDim.x;

    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n4; i += stride) {
        float4 v = in4[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    if (blockIdx.x == 0) {                       // tail (n % 4 elements), none for the default size
        for (int i = (n4 << 2) + tid; i < n; i += blockDim.x) s += in[i];
    }

#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(full, s, off);

    __shared__ float warp_sum[32];
    if (lane == 0) warp_sum[warp] = s;
    __syncthreads();

    if (warp == 0) {
        float w = (lane < nwarps) ? warp_sum[lane] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) w += __shfl_down_sync(full, w, off);

        if (lane == 0) {
            out[1 + blockIdx.x] = w;
            atomicAdd(&g_reduce_acc, w);
            __threadfence();
            const unsigned int ticket = atomicAdd(&g_reduce_ticket, 1u);
            if (ticket == gridDim.x - 1) {       // last block: every other block's add is visible
                __threadfence();
                const float total = atomicExch(&g_reduce_acc, 0.0f);
                out[0] = total;
                atomicExch(&g_reduce_ticket, 0u);
            }
        }
    }
}
