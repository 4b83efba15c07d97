// Host entry points of the kernels (plain C++: the .cpp files include this without CUDA headers).
#pragma once
// Runs the kernel over n values, `reps` times; returns the median milliseconds per run, or -1 on a CUDA error.
float run_kernel(const float* in, float* out, int n, int reps);
float run_lib_kernel(const float* in, float* out, int n, int reps, int variant);
double reference(float x);
