#include <cstdio>

int main() {
  double sum = 0;
  for (int i = 1; i <= 1000; ++i) sum += 1.0 / i;
  std::printf("sum=%.6f\n", sum);
  return 0;
}
