// jacobi2d: 40 Jacobi sweeps of the 2D 5-point Laplace stencil on an n x n fp32 grid
// with fixed (Dirichlet) boundary values. Every launch restarts from the same initial
// grid u0 (u0 -> A -> B -> A ...), so launches are idempotent. --n = grid side.
#include "bench_util.h"

namespace {
constexpr int kSweeps = 40;
constexpr int kInner = 2;
constexpr int kBX = 32, kBY = 8;
constexpr uint64_t kSeed = 0xD01;

__global__ void __launch_bounds__(kBX * kBY) sweep(const float* __restrict__ src, float* __restrict__ dst, int n) {
  const int j = blockIdx.x * kBX + threadIdx.x;
  const int i = blockIdx.y * kBY + threadIdx.y;
  if (i >= n || j >= n) return;
  const size_t c = static_cast<size_t>(i) * n + j;
  if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
    dst[c] = src[c];  // boundary stays fixed
  } else {
    dst[c] = 0.25f * ((src[c - n] + src[c + n]) + (src[c - 1] + src[c + 1]));
  }
}

// CPU reference for one point: after S sweeps a point depends only on cells within
// distance S, so run S sweeps in double on the (2S+1)^2 window around it.
double reference_point(int n, int pi, int pj) {
  const int i0 = std::max(0, pi - kSweeps), i1 = std::min(n - 1, pi + kSweeps);
  const int j0 = std::max(0, pj - kSweeps), j1 = std::min(n - 1, pj + kSweeps);
  const int h = i1 - i0 + 1, w = j1 - j0 + 1;
  std::vector<double> cur(static_cast<size_t>(h) * w), nxt;
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j)
      cur[static_cast<size_t>(i) * w + j] = bu::gen(static_cast<uint64_t>(i0 + i) * n + (j0 + j), kSeed, 0.0f, 1.0f);
  nxt = cur;
  for (int s = 0; s < kSweeps; ++s) {
    for (int i = 1; i < h - 1; ++i)
      for (int j = 1; j < w - 1; ++j) {
        const int gi = i0 + i, gj = j0 + j;
        if (gi == 0 || gj == 0 || gi == n - 1 || gj == n - 1) continue;  // grid boundary: fixed
        const size_t c = static_cast<size_t>(i) * w + j;
        nxt[c] = 0.25 * (cur[c - w] + cur[c + w] + cur[c - 1] + cur[c + 1]);
      }
    std::swap(cur, nxt);  // window-edge cells go stale, but never reach the centre in time
  }
  return cur[static_cast<size_t>(pi - i0) * w + (pj - j0)];
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 4096, 3, 16384);
  const int n = static_cast<int>(a.n);
  const size_t count = static_cast<size_t>(n) * n;
  bu::DeviceBuffer<float> u0(count), A(count), B(count);
  bu::fill(u0.p, count, kSeed, 0.0f, 1.0f);
  const dim3 block(kBX, kBY), grid(bu::grid_for(n, kBX), bu::grid_for(n, kBY));

  bu::time_launches([&] {
    sweep<<<grid, block>>>(u0.p, A.p, n);
    for (int s = 1; s < kSweeps; ++s) {
      if (s % 2) sweep<<<grid, block>>>(A.p, B.p, n);
      else sweep<<<grid, block>>>(B.p, A.p, n);
    }
  }, a.reps, kInner);
  const bu::DeviceBuffer<float>& result = (kSweeps % 2) ? A : B;

  bu::Checker chk;
  std::vector<long long> pts = bu::sample_indices(static_cast<long long>(count), 60);
  const long long cells = static_cast<long long>(count);
  const long long edge[] = {n + 1LL, 2LL * n - 2, cells - n - 2, cells / 2 + 1};
  pts.insert(pts.end(), std::begin(edge), std::end(edge));
  for (long long p : pts) {
    const int pi = static_cast<int>(p / n), pj = static_cast<int>(p % n);
    chk.near(result.slice(p, 1)[0], reference_point(n, pi, pj), 1e-4, 1e-5, "u", pi, pj);
  }
  return chk.finish();
}
