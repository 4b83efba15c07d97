#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  volatile double x = 0.0;
  for (int i = 0; i < 1000; ++i) x = x + i * 0.5;
  auto t1 = std::chrono::steady_clock::now();
  std::printf("time_ms=%.6f\nPASS\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
  return 0;
}
