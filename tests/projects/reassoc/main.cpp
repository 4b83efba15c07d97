#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  std::vector<float> v(n);
  unsigned s = 12345u;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = 1.0f + static_cast<float>(s >> 8) / 16777216.0f;  // in [1, 2)
  }
  volatile float sink = 0.0f;
  float sum = 0.0f;
  auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 20; ++rep) {
    sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += v[i] * 1.0001f;
    sink = sum;
  }
  auto t1 = std::chrono::steady_clock::now();
  std::printf("time_ms=%.6f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
  std::printf("checksum=%.9e\n", static_cast<double>(sum));
  return 0;
}
