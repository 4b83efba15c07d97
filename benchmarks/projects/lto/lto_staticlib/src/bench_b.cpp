// bench_b: times devkern_lut_filter (table-gather kernel of the devkern library), checks
// a sample against the CPU reference and prints time_ms, checksum, PASS/FAIL.
#include <vector>

#include "bench_common.h"
#include "devkern.h"
#include "ref.h"

int main(int argc, char** argv) {
  const bench::Options opt = bench::parse_args(argc, argv, 1ull << 25);  // 32M elements
  const std::size_t n = opt.n;
  const std::uint32_t seed = 0x2545F491u;

  std::vector<float> table(kTableSize), out(n);
  bench::Rng rng{0x9E3779B97F4A7C15ull};
  for (float& v : table) v = rng.uniform(0.0f, 1.0f);

  const double ms = devkern_lut_filter(table.data(), out.data(), n, seed, opt.reps);

  double checksum = 0.0;
  for (float v : out) checksum += v;

  // Check 4096 evenly spaced elements (all of them when n <= 4096).
  const std::size_t samples = n < 4096 ? n : 4096;
  bench::SampleCheck check{1e-3, 1e-4};
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = samples > 1 ? k * (n - 1) / (samples - 1) : 0;
    check(i, out[i], ref_lut_filter(table.data(), i, seed));
  }
  return bench::report(ms, checksum, check);
}
