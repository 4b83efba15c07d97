// rmsnorm: y[r,:] = x[r,:] * rsqrtf(mean(x[r,:]^2) + eps) * w[:], rows of 4096 floats, 32768 rows.
//
// Launch: grid (rows = 32768), block 256; one block per row. Each thread keeps its 16 elements in
// registers (4 float4 loads at (c*256 + tid)*4, c = 0..3, coalesced), forms a partial sum of squares,
// and the block reduces the 256 partials with a classic shared-memory tree (8 __syncthreads levels,
// fixed order, so the result is deterministic). Then every thread scales its elements with the
// rsqrtf factor and the weight vector (L2/L1 resident) and stores float4s.
// Bound: HBM bandwidth (512 MiB in + 512 MiB out, ~0.22 ms); the barrier-heavy tree reduction is the
// latency component.
// Default build (sm_90, -O3, nvcc 13.0): 32 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 0.27 ms.

#define RN_D 4096
#define RN_THREADS 256
#define RN_PER (RN_D / (RN_THREADS * 4))   // float4 per thread = 4

extern "C" __global__ void rmsnorm(const float* x, const float* w, float* y, float eps) {
    __shared__ float red[RN_THREADS];
    const int tid = threadIdx.x;
    const size_t row_off = (size_t)blockIdx.x * RN_D;
    const float4* xr = reinterpret_cast<const float4*>(x + row_off);

    float4 v[RN_PER];
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < RN_PER; ++c) {
        v[c] = xr[c * RN_THREADS + tid];
        ss = fmaf(v[c].x, v[c].x, ss);
        ss = fmaf(v[c].y, v[c].y, ss);
        ss = fmaf(v[c].z, v[c].z, ss);
        ss = fmaf(v[c].w, v[c].w, ss);
    }
    red[tid] = ss;
    __syncthreads();
#pragma unroll
    for (int s = RN_THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = rsqrtf(red[0] * (1.0f / RN_D) + eps);

    const float4* wv = reinterpret_cast<const float4*>(w);
    float4* yr = reinterpret_cast<float4*>(y + row_off);
#pragma unroll
    for (int c = 0; c < RN_PER; ++c) {
        const float4 g = wv[c * RN_THREADS + tid];
        float4 o;
        o.x = v[c].x * inv * g.x;
        o.y = v[c].y * inv * g.y;
        o.z = v[c].z * inv * g.z;
        o.w = v[c].w * inv * g.w;
        yr[c * RN_THREADS + tid] = o;
    }
}
