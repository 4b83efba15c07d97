// spill.cu: a register-hungry mixing kernel that spills at default ptxas settings on sm_90.
// Each thread keeps S floats of state live across R unrolled rounds; __launch_bounds__(256, 2)
// caps the registers at 128 per thread, so ptxas must spill part of the state.
#define S 136
#define R 24
extern "C" __global__ void __launch_bounds__(256, 2)
spill_mix(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float s[S];
#pragma unroll
  for (int i = 0; i < S; ++i) s[i] = in[(size_t)i * n + t];
#pragma unroll 1
  for (int r = 0; r < R; ++r) {
    const float c = 0.5f + 0.01f * r;
#pragma unroll
    for (int i = 0; i < S; ++i) s[i] = fmaf(s[i], c, s[(i * 7 + 3) % S] * 0.25f);
  }
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < S; ++i) acc = fmaf(acc, 0.999f, s[i]);
  out[t] = acc;
}
