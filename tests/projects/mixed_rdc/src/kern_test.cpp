// A precision test of the same kernel: tight tolerance, so flags that relax numerics must not reach it.
#include <cmath>
#include <cstdio>
#include <vector>
#include "kern.h"

int main() {
  const int n = 4096;
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = -4.0f + 8.0f * i / n;
  if (run_kernel(in.data(), out.data(), n, 1) < 0) return 2;
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += std::fabs(out[i] - reference(in[i])) > 1e-5 * (1 + std::fabs(reference(in[i])));
  std::printf("%s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
