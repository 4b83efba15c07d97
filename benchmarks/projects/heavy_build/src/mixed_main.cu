// mixed_main: calls the kernels of the five other files of mixed_lib.
#include <cstdio>
void run_a(const float*, float*, int); void run_b(const float*, float*, int); void run_c(const float*, float*, int);
void run_d(const float*, float*, int); void run_e(const float*, float*, int);
int main() {
  const int n = 1 << 16;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  run_a(in, out, n); run_b(in, out, n); run_c(in, out, n); run_d(in, out, n); run_e(in, out, n);
  cudaDeviceSynchronize();
  std::printf("done\n");
  return 0;
}
