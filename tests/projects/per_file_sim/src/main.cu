// Host-only stand-in for a GPU benchmark (see CMakeLists.txt): no CUDA call, so it runs without a GPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>

int main() {
  auto start = std::chrono::steady_clock::now();
  volatile double acc = 0.0;
  for (int i = 0; i < 2000000; ++i) acc = acc + 1.0 / (1.0 + i);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (const char *path = std::getenv("COMPILEIQ_KERNEL_TIMES")) {
    if (FILE *f = std::fopen(path, "w")) {
      std::fprintf(f, "# compileiq kernel times v1\n11\t7000000\thot_kernel\n11\t3000000\twarm_kernel\n");
      std::fclose(f);
    }
  }
  std::printf("time_ms=%.6f\n%s\n", ms, acc > 0.0 ? "PASS" : "FAIL");
  return 0;
}
