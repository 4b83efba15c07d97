#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kern.h"

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : (1 << 20);
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = std::sin(0.001f * i) * 4.0f;
  float ms = run_kernel(in.data(), out.data(), n, 20);
  if (ms < 0) { std::fprintf(stderr, "CUDA error\n"); return 2; }
  int bad = 0;
  for (int i = 0; i < n; i += n / 256 + 1) bad += std::fabs(out[i] - reference(in[i])) > 1e-3 * (1 + std::fabs(reference(in[i])));
  std::printf("time_ms=%.6f\n%s\n", ms, bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
