// Host code of handarch_bench: n independent pendulum rings, RK4 per thread.
#include <cstdio>
#include <vector>
#include "bench.h"
#include "kernels.h"

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 20);
  const int n = args.n;

  // Structure of arrays: angle j of system i at [j * n + i].
  std::vector<float> h_theta((size_t)kPend * n);
  fill_uniform(h_theta, -1.2f, 1.2f, 11u);

  float *d_theta, *d_out;
  CK(cudaMalloc(&d_theta, h_theta.size() * sizeof(float)));
  CK(cudaMalloc(&d_out, (size_t)n * sizeof(float)));
  CK(cudaMemcpy(d_theta, h_theta.data(), h_theta.size() * sizeof(float), cudaMemcpyHostToDevice));

  std::vector<float> ms = time_reps([&]() { launch_rk4(d_theta, d_out, n, 0); }, args.reps);
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out(n);
  CK(cudaMemcpy(h_out.data(), d_out, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 256)) {
    float t0[kPend];
    for (int j = 0; j < kPend; ++j) t0[j] = h_theta[(size_t)j * n + i];
    float ref = rk4_ref(t0);
    if (!close_enough(h_out[i], ref, 2e-3, 1e-4)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_out[i], ref);
      ++bad;
    }
  }
  CK(cudaFree(d_theta));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
