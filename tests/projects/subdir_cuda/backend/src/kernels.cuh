#pragma once
void launch_saxpy(int n, float a, const float* x, float* y);
void launch_scale(int n, float s, float* y);
void launch_reduce(int n, const float* y, float* out);
