// Host helpers of src/main.cpp.
#pragma once
#include <vector>
inline float host_sum(const std::vector<float>& v) { float s = 0.f; for (float x : v) s += x; return s; }
