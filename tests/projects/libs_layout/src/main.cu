// Host code of libs_bench: calls the static-library and object-library kernels.
#include <cstdio>
#include <vector>
#include "bench.h"
#include "layout.h"

int main(int argc, char** argv) {
  BenchArgs args = parse_args(argc, argv, 1 << 24);
  const int n = args.n;

  std::vector<float> h_spot(n), h_ratio(n), h_strike(n), h_years(n);
  fill_uniform(h_spot, 5.0f, 30.0f, 1u);
  fill_uniform(h_ratio, 0.7f, 1.3f, 2u);
  fill_uniform(h_years, 0.25f, 5.0f, 3u);
  for (int i = 0; i < n; ++i) h_strike[i] = h_spot[i] * h_ratio[i];

  const size_t bytes = (size_t)n * sizeof(float);
  float *d_spot, *d_strike, *d_years, *d_price, *d_out;
  CK(cudaMalloc(&d_spot, bytes));
  CK(cudaMalloc(&d_strike, bytes));
  CK(cudaMalloc(&d_years, bytes));
  CK(cudaMalloc(&d_price, bytes));
  CK(cudaMalloc(&d_out, bytes));
  CK(cudaMemcpy(d_spot, h_spot.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_strike, h_strike.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_years, h_years.data(), bytes, cudaMemcpyHostToDevice));

  auto step = [&]() {
    price_vol_averaged(d_spot, d_strike, d_years, d_price, n, 0);
    normalize_prices(d_price, d_spot, d_out, n, 0);
  };
  std::vector<float> ms = time_reps(step, args.reps);
  std::printf("time_ms=%.6f\n", median_of(ms));

  std::vector<float> h_out(n);
  CK(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost));

  int bad = 0;
  for (int i : sample_indices(n, 1024)) {
    double ref = price_vol_averaged_ref(h_spot[i], h_strike[i], h_years[i]) / h_spot[i] * 100.0;
    if (!close_enough(h_out[i], ref, 2e-3, 1e-3)) {
      if (bad < 5) std::fprintf(stderr, "mismatch at %d: got %.7g want %.7g\n", i, h_out[i], ref);
      ++bad;
    }
  }
  CK(cudaFree(d_spot));
  CK(cudaFree(d_strike));
  CK(cudaFree(d_years));
  CK(cudaFree(d_price));
  CK(cudaFree(d_out));
  return report(h_out, bad);
}
