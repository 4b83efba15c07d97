// slow_win: waits a fixed time (--sleep-ms, default 3700), then times C = A * B for n x n matrices held in
// std::vector and read through accessor functions (--n, default 160), checks the trace against the closed
// form and prints time_ms=<kernel ms> and PASS (exit 0) or FAIL (exit 1).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct Matrix {
  int n;
  std::vector<double> v;
  explicit Matrix(int n_) : n(n_), v(static_cast<size_t>(n_) * n_, 0.0) {}
  double get(int i, int j) const { return v[static_cast<size_t>(i) * n + j]; }
  void set(int i, int j, double x) { v[static_cast<size_t>(i) * n + j] = x; }
};

double multiply_add(double acc, double a, double b) { return acc + a * b; }

void product(const Matrix& a, const Matrix& b, Matrix& c) {
  for (int i = 0; i < a.n; ++i) {
    for (int j = 0; j < a.n; ++j) {
      double acc = 0.0;
      for (int k = 0; k < a.n; ++k) acc = multiply_add(acc, a.get(i, k), b.get(k, j));
      c.set(i, j, acc);
    }
  }
}

long parse(const char* opt, const char* v) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (!v[0] || *end || x < 0) {
    std::fprintf(stderr, "bad value for %s: %s\n", opt, v);
    std::exit(2);
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  long sleep_ms = 3700, n = 160;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--sleep-ms") && a + 1 < argc) {
      sleep_ms = parse("--sleep-ms", argv[++a]);
    } else if (!std::strcmp(argv[a], "--n") && a + 1 < argc) {
      n = parse("--n", argv[++a]);
    } else {
      std::fprintf(stderr, "usage: %s [--sleep-ms N] [--n N]\n", argv[0]);
      return 2;
    }
  }
  if (n < 8 || n > 2000) {
    std::fprintf(stderr, "--n must be between 8 and 2000\n");
    return 2;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  Matrix a(static_cast<int>(n)), b(static_cast<int>(n)), c(static_cast<int>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      a.set(i, j, (i == j) ? 2.0 : 0.0);
      b.set(i, j, 1.0 / (1.0 + i + j));
    }
  auto t0 = std::chrono::steady_clock::now();
  const int reps = 4;
  for (int r = 0; r < reps; ++r) product(a, b, c);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  double trace = 0.0, want = 0.0;  // A = 2 I: trace(C) = 2 * sum 1 / (1 + 2 i)
  for (int i = 0; i < n; ++i) {
    trace += c.get(i, i);
    want += 2.0 / (1.0 + 2.0 * i);
  }
  bool ok = std::fabs(trace - want) <= 1e-9 * std::fabs(want);
  std::printf("time_ms=%.3f\n%s\n", ms, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
