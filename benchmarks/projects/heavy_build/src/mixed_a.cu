// mixed_a: one of the five kernel files of mixed_lib (its own copy of mixed_kernels.cuh).
#define MIXED_ID a
#include "mixed_kernels.cuh"
