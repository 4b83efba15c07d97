// fp8_fake_quant: per-tensor-scale fake quantization through FP8 E4M3.
//
// out[i] = float(fp8_e4m3_satfinite(x[i] * inv_scale)) * scale, x and out float32 [n], n = 2^26,
// scale = amax(|x|) / 448 computed on the host (inv_scale = 1/scale passed too, as a quantizer
// would). Each thread handles one float4: one 16-byte load, a packed float4 -> __nv_fp8x4_e4m3
// conversion (cvt.rn.satfinite.e4m3x2.f32 on sm_90), conversion back, one 16-byte store.
// Launch: grid (n/1024 = 65536), block 256; the kernel guards i < n/4 (n must be a multiple of 4).
// Bound: HBM bandwidth (512 MiB moved, ~0.11 ms at 4.8 TB/s); a handful of ALU ops per element.
// Default build (sm_90, -O3, nvcc 13.0): 14 registers, 0 bytes spill, 0-byte stack frame.
// Measured once on an H200 (CuPy launch, median of 10): 0.14 ms.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

extern "C" __global__ void fp8_fake_quant(const float* x, float* out, float scale, float inv_scale, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;   // float4 index
    if (i >= (n >> 2)) return;
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x *= inv_scale;
    v.y *= inv_scale;
    v.z *= inv_scale;
    v.w *= inv_scale;
    const __nv_fp8x4_e4m3 q(v);               // round-to-nearest-even, saturate to +-448
    float4 d = static_cast<float4>(q);
    d.x *= scale;
    d.y *= scale;
    d.z *= scale;
    d.w *= scale;
    reinterpret_cast<float4*>(out)[i] = d;
}
