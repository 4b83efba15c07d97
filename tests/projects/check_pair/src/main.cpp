// pair_bench [both|heavy] [--n N]
//   both:  runs heavy and light, prints time_ms=<ms> (lower is better)
//   heavy: runs heavy only, prints rate=<iterations per microsecond> (higher is better)
// and PASS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

double light(long n);
double heavy(long n);

int main(int argc, char** argv) {
  bool both = argc < 2 || std::strcmp(argv[1], "heavy") != 0;
  long n = argc > 3 ? std::atol(argv[3]) : 4000000;
  auto t0 = std::chrono::steady_clock::now();
  double s = heavy(n) + (both ? light(1000) : 0.0);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (both)
    std::printf("time_ms=%.4f\n", ms);
  else
    std::printf("rate=%.4f\n", n / (1000.0 * ms));
  std::printf("sum=%g\nPASS\n", s);
  return 0;
}
