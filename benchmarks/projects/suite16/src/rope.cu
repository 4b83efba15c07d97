// rope: rotary position embedding (NeoX "rotate half" layout) applied to q [tokens x 32
// heads x 128] and k [tokens x 8 heads x 128] fp32, with a precomputed cos/sin cache
// [8192 positions x 64]. Out of place. One thread per rotated pair. --n = tokens.
#include "bench_util.h"

namespace {
constexpr int kHeadDim = 128, kHalf = kHeadDim / 2;
constexpr int kQHeads = 32, kKHeads = 8, kHeads = kQHeads + kKHeads;
constexpr int kMaxPos = 8192;
constexpr int kInner = 16;
constexpr double kTheta = 10000.0;
constexpr uint64_t kSeedQ = 0x201, kSeedK = 0x202;

__host__ __device__ inline int position_of(long long token) {
  return static_cast<int>((token * 7 + 3) % kMaxPos);  // scrambled positions
}

__global__ void rope_kernel(const float* __restrict__ q, const float* __restrict__ k,
                            const float* __restrict__ cos_c, const float* __restrict__ sin_c,
                            float* __restrict__ qo, float* __restrict__ ko, long long tokens) {
  const long long tid = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (tid >= tokens * kHeads * kHalf) return;
  const int i = static_cast<int>(tid % kHalf);
  const long long th = tid / kHalf;  // token * kHeads + head
  const int head = static_cast<int>(th % kHeads);
  const long long token = th / kHeads;
  const float* src;
  float* dst;
  if (head < kQHeads) {
    const size_t off = (static_cast<size_t>(token) * kQHeads + head) * kHeadDim;
    src = q + off;
    dst = qo + off;
  } else {
    const size_t off = (static_cast<size_t>(token) * kKHeads + (head - kQHeads)) * kHeadDim;
    src = k + off;
    dst = ko + off;
  }
  const size_t cs = static_cast<size_t>(position_of(token)) * kHalf + i;
  const float c = cos_c[cs], s = sin_c[cs];
  const float x0 = src[i], x1 = src[i + kHalf];
  dst[i] = x0 * c - x1 * s;
  dst[i + kHalf] = x1 * c + x0 * s;
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 16384, 1, 131072);
  const long long tokens = a.n;
  const size_t nq = static_cast<size_t>(tokens) * kQHeads * kHeadDim;
  const size_t nk = static_cast<size_t>(tokens) * kKHeads * kHeadDim;
  bu::DeviceBuffer<float> q(nq), k(nk), qo(nq), ko(nk), cos_d(kMaxPos * kHalf), sin_d(kMaxPos * kHalf);
  bu::fill(q.p, nq, kSeedQ, -1.0f, 1.0f);
  bu::fill(k.p, nk, kSeedK, -1.0f, 1.0f);
  std::vector<float> cos_h(kMaxPos * kHalf), sin_h(kMaxPos * kHalf);
  for (int p = 0; p < kMaxPos; ++p)
    for (int i = 0; i < kHalf; ++i) {
      const double ang = p * std::pow(kTheta, -2.0 * i / kHeadDim);
      cos_h[p * kHalf + i] = static_cast<float>(std::cos(ang));
      sin_h[p * kHalf + i] = static_cast<float>(std::sin(ang));
    }
  cos_d.from_host(cos_h);
  sin_d.from_host(sin_h);
  const long long work = tokens * kHeads * kHalf;
  const unsigned grid = bu::grid_for(work, 256);

  bu::time_launches([&] { rope_kernel<<<grid, 256>>>(q.p, k.p, cos_d.p, sin_d.p, qo.p, ko.p, tokens); },
                    a.reps, kInner);

  bu::Checker chk;
  for (long long t : bu::sample_indices(tokens, 512)) {
    const int head = static_cast<int>(bu::hash2(t, 99) % kHeads);
    const bool is_q = head < kQHeads;
    const size_t off = is_q ? (static_cast<size_t>(t) * kQHeads + head) * kHeadDim
                            : (static_cast<size_t>(t) * kKHeads + (head - kQHeads)) * kHeadDim;
    std::vector<float> got = is_q ? qo.slice(off, kHeadDim) : ko.slice(off, kHeadDim);
    const int pos = position_of(t);
    for (int i = 0; i < kHalf; ++i) {
      const double x0 = bu::gen(off + i, is_q ? kSeedQ : kSeedK, -1.0f, 1.0f);
      const double x1 = bu::gen(off + i + kHalf, is_q ? kSeedQ : kSeedK, -1.0f, 1.0f);
      const double c = cos_h[pos * kHalf + i], s = sin_h[pos * kHalf + i];
      chk.near(got[i], x0 * c - x1 * s, 1e-3, 1e-6, is_q ? "q" : "k", t, i);
      chk.near(got[i + kHalf], x1 * c + x0 * s, 1e-3, 1e-6, is_q ? "q" : "k", t, i + kHalf);
    }
  }
  return chk.finish();
}
