// nbody: all-pairs gravitational accelerations and potentials for n bodies (fp32,
// Plummer softening, rsqrtf), positions/masses staged through shared-memory tiles.
// Output per body: (ax, ay, az, phi). --n = bodies.
#include "bench_util.h"

namespace {
constexpr int kTile = 256;
constexpr int kInner = 2;
constexpr float kSoft2 = 1e-2f;
constexpr uint64_t kSeedP = 0xE01, kSeedM = 0xE02;

__global__ void init_bodies(float4* b, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    b[i] = make_float4(bu::gen(3 * i, kSeedP, -1.f, 1.f), bu::gen(3 * i + 1, kSeedP, -1.f, 1.f),
                       bu::gen(3 * i + 2, kSeedP, -1.f, 1.f), bu::gen(i, kSeedM, 0.5f, 1.5f));
}

__global__ void __launch_bounds__(kTile) forces(const float4* __restrict__ body, float4* __restrict__ out, int n) {
  __shared__ float4 tile[kTile];
  const int i = blockIdx.x * kTile + threadIdx.x;
  const float4 me = i < n ? body[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f, phi = 0.f;
  for (int t0 = 0; t0 < n; t0 += kTile) {
    const int j = t0 + threadIdx.x;
    tile[threadIdx.x] = j < n ? body[j] : make_float4(0.f, 0.f, 0.f, 0.f);  // padding: zero mass
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTile; ++k) {
      const float4 o = tile[k];
      const float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
      const float inv = rsqrtf(fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, kSoft2))));
      const float m_inv = o.w * inv;
      const float f = m_inv * inv * inv;
      ax = fmaf(f, dx, ax);
      ay = fmaf(f, dy, ay);
      az = fmaf(f, dz, az);
      phi -= m_inv;
    }
    __syncthreads();
  }
  if (i < n) out[i] = make_float4(ax, ay, az, phi);
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 65536, 1, 1 << 21);
  const int n = static_cast<int>(a.n);
  bu::DeviceBuffer<float4> body(n), out(n);
  init_bodies<<<512, 256>>>(body.p, n);
  CUDA_CHECK_LAUNCH();
  const unsigned grid = bu::grid_for(n, kTile);

  bu::time_launches([&] { forces<<<grid, kTile>>>(body.p, out.p, n); }, a.reps, kInner);

  // 64 sampled bodies against a double-precision sum over all n bodies. The allowed
  // error of a force component scales with the sum of the magnitudes of its terms.
  bu::Checker chk;
  std::vector<float4> b = body.to_host();
  std::vector<float4> got = out.to_host();
  for (long long i : bu::sample_indices(n, 64)) {
    double a3[3] = {0, 0, 0}, mag[3] = {0, 0, 0}, phi = 0.0;
    for (int j = 0; j < n; ++j) {
      const double d[3] = {static_cast<double>(b[j].x) - b[i].x, static_cast<double>(b[j].y) - b[i].y,
                           static_cast<double>(b[j].z) - b[i].z};
      const double inv = 1.0 / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + kSoft2);
      const double f = b[j].w * inv * inv * inv;
      for (int c = 0; c < 3; ++c) {
        a3[c] += f * d[c];
        mag[c] += std::fabs(f * d[c]);
      }
      phi -= b[j].w * inv;
    }
    chk.near(got[i].x, a3[0], 1e-4, 2e-5 * mag[0], "ax", i);
    chk.near(got[i].y, a3[1], 1e-4, 2e-5 * mag[1], "ay", i);
    chk.near(got[i].z, a3[2], 1e-4, 2e-5 * mag[2], "az", i);
    chk.near(got[i].w, phi, 1e-4, 0.0, "phi", i);
  }
  return chk.finish();
}
