// mixed_e: one of the five kernel files of mixed_lib (its own copy of mixed_kernels.cuh).
#define MIXED_ID e
#include "mixed_kernels.cuh"
