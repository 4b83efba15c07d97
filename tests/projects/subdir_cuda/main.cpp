#include <cstdio>
#include <cstdlib>
#include "backend.h"

int main(int argc, char** argv) {
  int n = argc > 2 ? std::atoi(argv[2]) : 1 << 20;
  double ms = 0.0;
  int rc = backend_run(n, 20, &ms);
  std::printf("time_ms=%.6e\n", ms);
  std::printf(rc == 0 ? "PASS\n" : "FAIL\n");
  return rc;
}
