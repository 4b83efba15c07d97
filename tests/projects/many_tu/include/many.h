// Launchers and CPU references of the 19 kernels in src/k01.cu ... src/k19.cu.
#pragma once
#include <cuda_runtime.h>

void launch_k01(float* out, const float* in, int n, cudaStream_t s);
float ref_k01(float x);
void launch_k02(float* out, const float* in, int n, cudaStream_t s);
float ref_k02(float x);
void launch_k03(float* out, const float* in, int n, cudaStream_t s);
float ref_k03(float x);
void launch_k04(float* out, const float* in, int n, cudaStream_t s);
float ref_k04(float x);
void launch_k05(float* out, const float* in, int n, cudaStream_t s);
float ref_k05(float x);
void launch_k06(float* out, const float* in, int n, cudaStream_t s);
float ref_k06(float x);
void launch_k07(float* out, const float* in, int n, cudaStream_t s);
float ref_k07(float x);
void launch_k08(float* out, const float* in, int n, cudaStream_t s);
float ref_k08(float x);
void launch_k09(float* out, const float* in, int n, cudaStream_t s);
float ref_k09(float x);
void launch_k10(float* out, const float* in, int n, cudaStream_t s);
float ref_k10(float x);
void launch_k11(float* out, const float* in, int n, cudaStream_t s);
float ref_k11(float x);
void launch_k12(float* out, const float* in, int n, cudaStream_t s);
float ref_k12(float x);
void launch_k13(float* out, const float* in, int n, cudaStream_t s);
float ref_k13(float x);
void launch_k14(float* out, const float* in, int n, cudaStream_t s);
float ref_k14(float x);
void launch_k15(float* out, const float* in, int n, cudaStream_t s);
float ref_k15(float x);
void launch_k16(float* out, const float* in, int n, cudaStream_t s);
float ref_k16(float x);
void launch_k17(float* out, const float* in, int n, cudaStream_t s);
float ref_k17(float x);
void launch_k18(float* out, const float* in, int n, cudaStream_t s);
float ref_k18(float x);
void launch_k19(float* out, const float* in, int n, cudaStream_t s);
float ref_k19(float x);
