// A float loop whose speed depends on the optimization level. Prints time_ms=... and PASS.
#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  long n = argc > 2 ? std::atol(argv[2]) : 3000000;
  auto t0 = std::chrono::steady_clock::now();
  double s = 0.0;
  for (int rep = 0; rep < 20; ++rep)
    for (long i = 0; i < n; ++i) s += (i % 7) * 0.5 + rep;  // REVISION: work
  auto t1 = std::chrono::steady_clock::now();
  std::printf("sum=%g\ntime_ms=%.4f\nPASS\n", s, std::chrono::duration<double, std::milli>(t1 - t0).count());
  return 0;
}
