// Times slow_check's CPU reference alone (no CUDA needed):
//   (from benchmarks/projects/slow_check) g++ -O2 -std=c++17 -Isrc tools/time_reference.cpp -o /tmp/time_ref && /tmp/time_ref 100000
// Checks the first N "elements" against a float re-computation of the GPU formula and
// prints the seconds taken and the per-element cost, from which the default --check is set.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "reference.h"

// The kernel's float formula on the host (stands in for the GPU output).
static float element_float(float x) {
  float acc = 0.0f;
  for (int k = 0; k < kIters; ++k) {
    float t = std::fmaf(0.02f, (float)k, x);
    float s = std::sin(std::fmaf(0.3f, acc, 1.5f * t - 1.0f));
    float e = std::exp(-0.5f * s * s);
    float p = std::pow(e + 0.25f, 0.75f);
    float r = std::sqrt(std::fmaf(s, s, p));
    acc = std::fmaf(acc, 0.95f, 0.1f * r);
  }
  return acc;
}

int main(int argc, char** argv) {
  long long check = argc > 1 ? std::atoll(argv[1]) : 100000;
  long long n = 1 << 24;
  std::vector<float> out(n, 0.0f);
  for (long long j = 0; j < check; ++j) {
    uint32_t i = checked_index(j, check, n);
    out[i] = element_float(input_value(i));
  }
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  double max_rel = reference_check(out.data(), n, check);
  std::clock_t c1 = std::clock();
  auto t1 = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(t1 - t0).count();
  double cpu = double(c1 - c0) / CLOCKS_PER_SEC;
  std::printf("check=%lld wall_s=%.3f cpu_s=%.3f us_per_element=%.3f max_rel_err=%.3g\n", check,
              wall, cpu, 1e6 * cpu / check, max_rel);
  return 0;
}
