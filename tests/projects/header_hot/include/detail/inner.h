#pragma once
#define WORK_REPEATS 1

inline double inner_step(int i, double acc) { return 1e-9 * i + 1e-12 * acc; }
