// energy_sim: prints time_ms=<t> and PASS, and adds <e> millijoules to the counter file named by
// COMPILEIQ_SIMULATE_ENERGY (when set). With the project's own flags t ~ 10, e ~ 1000; -ffast-math (it
// defines __FAST_MATH__): t ~ 6 but e ~ 1500 (faster, hungrier); -fno-math-errno alone (__NO_MATH_ERRNO__):
// t ~ 9, e ~ 700 (the least energy). Each value varies by about 1% between runs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

int main() {
#if defined(__FAST_MATH__)
  const double t = 6.0, e = 1500.0;
#elif defined(__NO_MATH_ERRNO__)
  const double t = 9.0, e = 700.0;
#else
  const double t = 10.0, e = 1000.0;
#endif
  std::mt19937_64 rng(static_cast<unsigned long long>(
      std::chrono::steady_clock::now().time_since_epoch().count()) ^ static_cast<unsigned long long>(getpid()));
  std::normal_distribution<double> jitter(1.0, 0.01);
  const char* counter = std::getenv("COMPILEIQ_SIMULATE_ENERGY");
  if (counter && *counter) {
    double total = 0.0;
    {
      std::ifstream in(counter);
      in >> total;
    }
    const std::string tmp = std::string(counter) + ".tmp";
    {
      std::ofstream out(tmp);
      out.precision(17);
      out << total + e * jitter(rng) << "\n";
    }
    if (std::rename(tmp.c_str(), counter) != 0) return 3;
  }
  std::printf("time_ms=%.4f\nPASS\n", t * jitter(rng));
  return 0;
}
