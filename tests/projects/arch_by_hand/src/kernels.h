// RK4 integration of a ring of damped, coupled pendulums (one system per thread).
#pragma once
#include <cuda_runtime.h>

constexpr int kPend = 8;     // pendulums per system (16 state variables)
constexpr int kSteps = 128;  // RK4 steps per system
constexpr float kDt = 0.015f;

// theta0 holds kPend initial angles per system; out gets one energy per system.
void launch_rk4(const float* theta0, float* out, int n, cudaStream_t s);
float rk4_ref(const float* theta0);
