// histogram_shared: 256-bin histogram of n uint8 values, one private histogram per block.
//
// Design: grid-stride uint4 loads (16 bytes per load), each byte goes to a per-warp sub-histogram
// in static shared memory with a shared-memory atomicAdd (8 warps x 256 bins x 4 B = 8 KiB); at the
// end the block merges its 8 sub-histograms and writes out[blockIdx.x * 256 + bin] as a float.
// No global atomics: the counts are exact integers, so the output is deterministic.
// Default size: n = 2^28 bytes (scaled up from 2^26, which would take only ~0.03 ms), 1024 blocks
// x 256 threads, 64 uint4 per thread; 256 MiB read; bound by shared-memory atomic throughput and
// same-bin/bank conflicts (the input is skewed toward low values), ~0.1-0.3 ms on an H200.
// Default build (-O3, sm_90): 32 registers, 0 spill stores/loads, no stack; 8 KiB static shared
// Requirements: per-block counts < 2^24 (exact in float); any blockDim.x (warps share sub-histograms
// modulo 8), out_count = 256 * gridDim.x.

#define HIST_BINS 256
#define HIST_SUB 8

__device__ __forceinline__ void hist_add_word(unsigned int* h, unsigned int w)
{
    atomicAdd(&h[w & 0xffu], 1u);
    atomicAdd(&h[(w >> 8) & 0xffu], 1u);
    atomicAdd(&h[(w >> 16) & 0xffu], 1u);
    atomicAdd(&h[w >> 24], 1u);
}

extern "C" __global__ void histogram_shared(const unsigned char* data, float* out, int n)
{
    __shared__ unsigned int hist[HIST_SUB][HIST_BINS];

    const int tid = threadIdx.x;
    for (int i = tid; i < HIST_SUB * HIST_BINS; i += blockDim.x) (&hist[0][0])[i] = 0u;
    __syncthreads();

    unsigned int* mine = hist[(tid >> 5) & (HIST_SUB - 1)];

    const uint4* d16 = reinterpret_cast<const uint4*>(data);
    const int n16 = n >> 4;
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + tid; i < n16; i += stride) {
        const uint4 v = d16[i];
        hist_add_word(mine, v.x);
        hist_add_word(mine, v.y);
        hist_add_word(mine, v.z);
        hist_add_word(mine, v.w);
    }
    if (blockIdx.x == 0) {                       // tail (n % 16 bytes), none for the default size
        for (int i = (n16 << 4) + tid; i < n; i += blockDim.x) atomicAdd(&mine[data[i]], 1u);
    }
    __syncthreads();

    for (int bin = tid; bin < HIST_BINS; bin += blockDim.x) {
        unsigned int c = 0u;
#pragma unroll
        for (int s = 0; s < HIST_SUB; ++s) c += hist[s][bin];
        out[(size_t)blockIdx.x * HIST_BINS + bin] = (float)c;
    }
}
