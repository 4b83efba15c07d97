// thrust_ops: a handful of thrust algorithms over floats and ints (heavy templates: a long front end and host compile).
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/sort.h>
#include <thrust/reduce.h>
#include <thrust/transform_reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/functional.h>
#include <cstdio>

struct square { __host__ __device__ float operator()(float x) const { return x * x; } };

int main() {
  const int n = 1 << 20;
  thrust::device_vector<float> f(n);
  thrust::device_vector<int> k(n);
  thrust::sequence(f.begin(), f.end(), 1.0f, 0.5f);
  thrust::sequence(k.begin(), k.end(), n, -1);
  thrust::sort(f.begin(), f.end(), thrust::greater<float>());
  thrust::sort_by_key(k.begin(), k.end(), f.begin());
  float s = thrust::transform_reduce(f.begin(), f.end(), square(), 0.0f, thrust::plus<float>());
  thrust::inclusive_scan(k.begin(), k.end(), k.begin());
  int m = thrust::reduce(k.begin(), k.end(), 0, thrust::maximum<int>());
  std::printf("s=%g m=%d\n", s, m);
  return 0;
}
