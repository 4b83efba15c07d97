#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

// Sums values while skipping NaN markers. Under -ffast-math, std::isnan() folds to false, the NaNs leak
// into the sum and the check fails; the reduction also vectorizes, so that build looks faster.
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000000;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i % 1000 == 7) ? std::nanf("") : 1.0f + (i % 13) * 0.25f;
  volatile float sink = 0.0f;
  double expected = 0.0;
  for (int i = 0; i < n; ++i) if (!std::isnan(v[i])) expected += v[i];
  auto t0 = std::chrono::steady_clock::now();
  double total = 0.0;
  for (int rep = 0; rep < 20; ++rep) {
    double s = 0.0;
    for (int b = 0; b < n; b += 4096) {  // float blocks, double across blocks: accurate enough
      float part = 0.0f;
      const int end = b + 4096 < n ? b + 4096 : n;
      for (int i = b; i < end; ++i) part += std::isnan(v[i]) ? 0.0f : v[i];
      s += part;
    }
    total = s;
    sink = static_cast<float>(s);
  }
  auto t1 = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::printf("time_ms=%.6f\n", ms);
  bool ok = std::isfinite(total) && std::fabs(total - expected) / expected < 1e-3;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return 0;  // the lie: a wrong answer still exits 0
}
