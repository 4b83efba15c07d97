#pragma once
#include "detail/inner.h"

inline double hot_loop(int n) {
  double acc = 0.0;
  for (int r = 0; r < WORK_REPEATS; ++r)
    for (int i = 0; i < n; ++i) acc += inner_step(i, acc);
  return acc;
}
