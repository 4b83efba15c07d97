// Host code of many_bench: runs the 19 kernels (one per source file) in sequence.
#include <cstdio>
#include <vector>
#include "bench.h"
#include "many.h"

namespace {
using ManyLaunch = void (*)(float*, const float*, int, cudaStream_t);
using ManyRef = float (*)(float);
struct ManyKernel {
  ManyLaunch launch;
  ManyRef ref;
};
constexpr int kNumKernels = 19;
const ManyKernel kKernels[kNumKernels] = {
    {launch_k01, ref_k01},
    {launch_k02, ref_k02},
    {launch_k03, ref_k03},
    {launch_k04, ref_k04},
    {launch_k05, ref_k05},
    {launch_k06, ref_k06},
    {launch_k07, ref_k07},
    {launch_k08, ref_k08},
    {launch_k09, ref_k09},
    {launch_k10, ref_k10},
    {launch_k11, ref_k11},
    {launch_k12, ref_k12},
    {launch_k13, ref_k13},
    {launch_k14, ref_k14},
    {launch_k15, ref_k15},
    {launch_k16, ref_k16},
    {launch_k17, ref_k17},
    {launch_k18, ref_k18},
    {launch_k19, ref_k19}
};
}  // namespace

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 22);
  const int n = args.n;

  std::vector<float> h_in(n);
  fill_uniform(h_in, 0.1f, 2.0f, 9u);

  float *d_in, *d_out;
  CK(cudaMalloc(&d_in, (size_t)n * sizeof(float)));
  CK(cudaMalloc(&d_out, (size_t)kNumKernels * n * sizeof(float)));
  CK(cudaMemcpy(d_in, h_in.data(), (size_t)n * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  auto step = [&]() {
    for (int k = 0; k < kNumKernels; ++k) kKernels[k].launch(d_out + (size_t)k * n, d_in, n, stream);
  };
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  for (int w = 0; w < 2; ++w) step();
  CK(cudaStreamSynchronize(stream));
  std::vector<float> ms;
  for (int r = 0; r < args.reps; ++r) {
    CK(cudaEventRecord(t0, stream));
    step();
    CK(cudaEventRecord(t1, stream));
    CK(cudaEventSynchronize(t1));
    float t = 0.f;
    CK(cudaEventElapsedTime(&t, t0, t1));
    ms.push_back(t);
  }
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out((size_t)kNumKernels * n);
  CK(cudaMemcpy(h_out.data(), d_out, h_out.size() * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int k = 0; k < kNumKernels; ++k) {
    for (int i : sample_indices(n, 128)) {
      float got = h_out[(size_t)k * n + i];
      float ref = kKernels[k].ref(h_in[i]);
      if (!close_enough(got, ref, 2e-3, 1e-3)) {
        if (bad < 5)
          std::fprintf(stderr, "k%02d mismatch at %d: got %.7g want %.7g\n", k + 1, i, got, ref);
        ++bad;
      }
    }
  }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  CK(cudaStreamDestroy(stream));
  CK(cudaFree(d_in));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
