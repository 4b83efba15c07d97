// Output comparison helper; the first few mismatches are printed to stderr.
#include "check.h"

#include <cmath>
#include <cstdio>

bool Checker::count_mismatch() { return failed_++ < 5; }

void Checker::exact(const char* what, std::uint64_t index, std::uint32_t gpu,
                    std::uint32_t ref) {
  ++checked_;
  if (gpu != ref && count_mismatch())
    std::fprintf(stderr, "mismatch %s[%llu]: gpu 0x%08x ref 0x%08x\n", what,
                 static_cast<unsigned long long>(index), gpu, ref);
}

void Checker::close(const char* what, std::uint64_t index, double gpu, double ref,
                    double atol, double rtol) {
  ++checked_;
  const double err = std::fabs(gpu - ref);
  if (err > max_err_) max_err_ = err;
  if (!(err <= atol + rtol * std::fabs(ref)) && count_mismatch())
    std::fprintf(stderr, "mismatch %s[%llu]: gpu %.9g ref %.9g\n", what,
                 static_cast<unsigned long long>(index), gpu, ref);
}

void Checker::summary() const {
  std::fprintf(stderr, "checked %zu values, %zu out of tolerance, max float abs err %.3g\n",
               checked_, failed_, max_err_);
}
