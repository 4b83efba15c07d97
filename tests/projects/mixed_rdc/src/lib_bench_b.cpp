#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kern.h"

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : (1 << 20);
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = std::cos(0.002f * i) * 3.0f;
  float ms = run_lib_kernel(in.data(), out.data(), n, 20, 1);
  if (ms < 0) { std::fprintf(stderr, "CUDA error\n"); return 2; }
  std::printf("time_ms=%.6f\nPASS\n", ms);
  return 0;
}
