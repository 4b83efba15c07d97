// Comparison of sampled GPU outputs against the CPU reference (check.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

class Checker {
 public:
  // Integer outputs must match exactly.
  void exact(const char* what, std::uint64_t index, std::uint32_t gpu, std::uint32_t ref);
  // Floating-point outputs must satisfy |gpu - ref| <= atol + rtol * |ref|.
  void close(const char* what, std::uint64_t index, double gpu, double ref, double atol,
             double rtol);
  bool passed() const { return failed_ == 0; }
  // Prints a one-line summary to stderr.
  void summary() const;

 private:
  // Counts a mismatch; true for the first few, which are printed.
  bool count_mismatch();
  std::size_t checked_ = 0, failed_ = 0;
  double max_err_ = 0.0;
};
