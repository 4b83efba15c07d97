// swiglu_mlp_act: fused SwiGLU activation of an MLP, out = silu(gate) * up, silu(g) = g / (1 + expf(-g)).
//
// gate, up, out float32 [n], n = 2^26 (two separate input buffers). Launch: grid (8192), block 256,
// a grid-stride loop over float4 (2^24 float4 / 2^21 threads = 8 iterations per thread; the loop
// bound handles any n that is a multiple of 4). Per element: one expf, one IEEE division, two muls.
// Bound: HBM bandwidth (768 MiB moved, ~0.16 ms); expf + division (a multi-instruction Newton
// sequence without fast math) is the compute share, cheaper with --use_fast_math.
// Default build (sm_90, -O3, nvcc 13.0): 34 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 0.21 ms.

__device__ __forceinline__ float sw_silu_mul(float g, float u) {
    return g / (1.0f + expf(-g)) * u;
}

extern "C" __global__ void swiglu_mlp_act(const float* gate, const float* up, float* out, int n) {
    const int n4 = n >> 2;
    const int stride = gridDim.x * blockDim.x;
    const float4* g4 = reinterpret_cast<const float4*>(gate);
    const float4* u4 = reinterpret_cast<const float4*>(up);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 g = g4[i];
        const float4 u = u4[i];
        float4 o;
        o.x = sw_silu_mul(g.x, u.x);
        o.y = sw_silu_mul(g.y, u.y);
        o.z = sw_silu_mul(g.z, u.z);
        o.w = sw_silu_mul(g.w, u.w);
        o4[i] = o;
    }
}
