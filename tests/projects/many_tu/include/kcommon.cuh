// Shared scaffolding of the 19 kernel files: each file defines op(x, t) and expands
// DEFINE_MANY_TU_KERNEL(NN, op) into a kernel, its launcher launch_kNN and a CPU
// reference ref_kNN, all summing op over kInner values of t.
#pragma once
#include <cmath>
#include <cuda_runtime.h>
#include "bench.h"
#include "many.h"

constexpr int kInner = 48;

#define DEFINE_MANY_TU_KERNEL(NN, OPFN)                                              \
  static __host__ __device__ inline float sum_k##NN(float x) {                       \
    float acc = 0.0f;                                                                \
    for (int k = 0; k < kInner; ++k) acc += OPFN(x, 0.0625f * k);                    \
    return acc;                                                                      \
  }                                                                                  \
  __global__ void k##NN##_kernel(float* __restrict__ out, const float* __restrict__ in, \
                                 int n) {                                            \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                   \
    if (i < n) out[i] = sum_k##NN(in[i]);                                            \
  }                                                                                  \
  void launch_k##NN(float* out, const float* in, int n, cudaStream_t s) {            \
    const int block = 256;                                                           \
    k##NN##_kernel<<<(n + block - 1) / block, block, 0, s>>>(out, in, n);            \
    CK(cudaGetLastError());                                                          \
  }                                                                                  \
  float ref_k##NN(float x) { return sum_k##NN(x); }
