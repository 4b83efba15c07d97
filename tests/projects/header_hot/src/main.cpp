#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hot.h"

int main(int argc, char** argv) {
  int n = 200000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--n") == 0) n = std::atoi(argv[i + 1]);
  auto t0 = std::chrono::steady_clock::now();
  volatile double sink = hot_loop(n);
  auto t1 = std::chrono::steady_clock::now();
  std::printf("time_ms=%.6f\nsum=%g\nPASS\n", std::chrono::duration<double, std::milli>(t1 - t0).count(), (double)sink);
  return 0;
}
