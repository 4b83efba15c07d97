// drifter <counter-file>: prints "time_ms=<t>" and "PASS". t = work * drift, where work is 8 with
// -fno-math-errno (gcc defines __NO_MATH_ERRNO__) and 10 otherwise, and the drift 2 + sin(0.15 k)
// follows k, the number of earlier runs counted in <counter-file> (shared by every build, as the machine
// is). Neighbouring runs see almost the same drift; runs a few trials apart see up to 3x different ones.
#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: drifter <counter-file>\n");
    return 2;
  }
  long k = 0;
  if (std::FILE* f = std::fopen(argv[1], "r")) {
    if (std::fscanf(f, "%ld", &k) != 1) k = 0;
    std::fclose(f);
  }
  if (std::FILE* f = std::fopen(argv[1], "w")) {
    std::fprintf(f, "%ld\n", k + 1);
    std::fclose(f);
  }
#ifdef __NO_MATH_ERRNO__
  const double work = 8.0;
#else
  const double work = 10.0;
#endif
  const double drift = 2.0 + std::sin(0.15 * static_cast<double>(k));
  std::printf("time_ms=%.6f\nPASS\n", work * drift);
  return 0;
}
