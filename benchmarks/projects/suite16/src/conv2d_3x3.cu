// conv2d_3x3: 2-D 3x3 convolution, 16 input -> 16 output channels, fp32, zero padding
// ("same" size), plus a bias per output channel. Weights and biases live in constant
// memory; each block (32x8 threads) stages the 34x18 input window of its 32x16 output tile,
// all 16 channels, in shared memory. Each thread computes two vertically adjacent pixels,
// keeping their 2 x 16 output channels in registers (2304 multiply-adds per pixel; each
// weight is read once for both pixels). Layout: [channel][row][col]. --n = image side.
#include "bench_util.h"

namespace {
constexpr int kCin = 16, kCout = 16, kTaps = 9;
constexpr int kPY = 2;  // output rows per thread (2 x 16 accumulators in registers)
constexpr int kBX = 32, kBY = 8, kThreads = kBX * kBY, kOH = kBY * kPY;  // kOH: tile rows
constexpr int kTW = kBX + 2, kTH = kOH + 2;  // input window with a 1-pixel halo
constexpr int kInner = 4;
constexpr uint64_t kSeedX = 0x2D01, kSeedW = 0x2D02, kSeedB = 0x2D03;
constexpr float kWLo = -0.25f, kWHi = 0.25f, kBLo = -0.1f, kBHi = 0.1f;

__constant__ float c_w[kCout * kCin * kTaps];  // [co][ci][di*3+dj]
__constant__ float c_b[kCout];

__global__ void __launch_bounds__(kThreads)
    conv_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float tile[kCin][kTH][kTW];
  const int i0 = blockIdx.y * kOH, j0 = blockIdx.x * kBX;
  const size_t plane = static_cast<size_t>(n) * n;
  const int tid = threadIdx.y * kBX + threadIdx.x;
  for (int e = tid; e < kCin * kTH * kTW; e += kThreads) {
    const int ci = e / (kTH * kTW), rem = e % (kTH * kTW);
    const int ti = rem / kTW, tj = rem % kTW;
    const int gi = i0 + ti - 1, gj = j0 + tj - 1;
    tile[ci][ti][tj] = (gi >= 0 && gi < n && gj >= 0 && gj < n)
                           ? x[ci * plane + static_cast<size_t>(gi) * n + gj]
                           : 0.f;
  }
  __syncthreads();
  const int ti0 = threadIdx.y * kPY;  // this thread's first output row inside the tile
  const int j = j0 + threadIdx.x;
  if (i0 + ti0 >= n || j >= n) return;  // after the only barrier

  float acc[kPY][kCout];
#pragma unroll
  for (int r = 0; r < kPY; ++r)
#pragma unroll
    for (int co = 0; co < kCout; ++co) acc[r][co] = c_b[co];
  for (int ci = 0; ci < kCin; ++ci) {
    float v[kPY + 2][3];  // the (kPY+2) x 3 input window shared by this thread's pixels
#pragma unroll
    for (int di = 0; di < kPY + 2; ++di)
#pragma unroll
      for (int dj = 0; dj < 3; ++dj) v[di][dj] = tile[ci][ti0 + di][threadIdx.x + dj];
#pragma unroll
    for (int co = 0; co < kCout; ++co)
#pragma unroll
      for (int t = 0; t < kTaps; ++t) {
        const float w = c_w[(co * kCin + ci) * kTaps + t];
#pragma unroll
        for (int r = 0; r < kPY; ++r) acc[r][co] += w * v[r + t / 3][t % 3];
      }
  }
#pragma unroll
  for (int r = 0; r < kPY; ++r) {
    const int i = i0 + ti0 + r;
    if (i >= n) break;
    const size_t p = static_cast<size_t>(i) * n + j;
#pragma unroll
    for (int co = 0; co < kCout; ++co) y[co * plane + p] = acc[r][co];
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 2048, 1, 8192);
  const int n = static_cast<int>(a.n);
  const size_t plane = static_cast<size_t>(n) * n;
  bu::DeviceBuffer<float> x(kCin * plane), y(kCout * plane);
  bu::fill(x.p, kCin * plane, kSeedX, -1.0f, 1.0f);
  std::vector<float> hw(kCout * kCin * kTaps), hb(kCout);
  for (size_t k = 0; k < hw.size(); ++k) hw[k] = bu::gen(k, kSeedW, kWLo, kWHi);
  for (int k = 0; k < kCout; ++k) hb[k] = bu::gen(k, kSeedB, kBLo, kBHi);
  CUDA_CHECK(cudaMemcpyToSymbol(c_w, hw.data(), hw.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpyToSymbol(c_b, hb.data(), hb.size() * sizeof(float)));
  const dim3 block(kBX, kBY), grid(bu::grid_for(n, kBX), bu::grid_for(n, kOH));

  bu::time_launches([&] { conv_kernel<<<grid, block>>>(x.p, y.p, n); }, a.reps, kInner);

  // 1024 sampled outputs (plus the four corners of the first and last channels), each a
  // 144-term sum in double. fp32 error is bounded relative to the sum of abs terms.
  bu::Checker chk;
  const long long total = static_cast<long long>(kCout) * static_cast<long long>(plane);
  std::vector<long long> pts = bu::sample_indices(total, 1024);
  const long long pl = static_cast<long long>(plane);
  for (long long co : {0LL, kCout - 1LL})
    for (long long q : {0LL, n - 1LL, pl - n, pl - 1}) pts.push_back(co * pl + q);
  for (long long s : pts) {
    const int co = static_cast<int>(s / pl);
    const int i = static_cast<int>((s % pl) / n), j = static_cast<int>(s % n);
    double ref = hb[co], mag = std::fabs(ref);
    for (int ci = 0; ci < kCin; ++ci)
      for (int di = 0; di < 3; ++di)
        for (int dj = 0; dj < 3; ++dj) {
          const int gi = i + di - 1, gj = j + dj - 1;
          if (gi < 0 || gi >= n || gj < 0 || gj >= n) continue;
          const double xv = bu::gen(ci * plane + static_cast<size_t>(gi) * n + gj, kSeedX, -1.0f, 1.0f);
          const double t = static_cast<double>(hw[(co * kCin + ci) * kTaps + di * 3 + dj]) * xv;
          ref += t;
          mag += std::fabs(t);
        }
    chk.near(y.slice(static_cast<size_t>(s), 1)[0], ref, 1e-4, 1e-4 * mag + 1e-6, "y", co,
             static_cast<long long>(i) * n + j);
  }
  return chk.finish();
}
