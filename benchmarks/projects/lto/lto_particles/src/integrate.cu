// Integration kernel (semi-implicit Euler, kSteps steps per launch) and its host launcher.
#include "cuda_util.cuh"
#include "forces.cuh"
#include "particles.h"

// One thread per particle; reads the initial state, integrates, writes the final state.
__global__ void integrate_kernel(const float4* __restrict__ pos_in,
                                 const float4* __restrict__ vel_in,
                                 float4* __restrict__ pos_out,
                                 float4* __restrict__ vel_out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float4 p = pos_in[i];
  const float4 v = vel_in[i];
  float x = p.x, y = p.y, z = p.z;
  float vx = v.x, vy = v.y, vz = v.z;
  const float inv_m = p.w;
  for (int s = 0; s < kSteps; ++s) {
    // 10 cross-TU helper calls per step.
    const float pull = central_pull(fmaf(x, x, fmaf(y, y, z * z)));
    const float ax = inv_m * (spring_force(x) + drag_force(vx) - pull * x);
    const float ay = inv_m * (spring_force(y) + drag_force(vy) - pull * y);
    const float az = inv_m * (spring_force(z) + drag_force(vz) - pull * z);
    vx = clamp_speed(fmaf(ax, kDt, vx));
    vy = clamp_speed(fmaf(ay, kDt, vy));
    vz = clamp_speed(fmaf(az, kDt, vz));
    x = fmaf(vx, kDt, x);
    y = fmaf(vy, kDt, y);
    z = fmaf(vz, kDt, z);
  }
  pos_out[i] = make_float4(x, y, z, inv_m);
  vel_out[i] = make_float4(vx, vy, vz, 0.0f);
}

double gpu_integrate(const float* pos_in, const float* vel_in, float* pos_out,
                     float* vel_out, std::size_t n, int reps) {
  const std::size_t bytes = n * sizeof(float4);
  float4 *d_pos_in, *d_vel_in, *d_pos_out, *d_vel_out;
  CUDA_CHECK(cudaMalloc(&d_pos_in, bytes));
  CUDA_CHECK(cudaMalloc(&d_vel_in, bytes));
  CUDA_CHECK(cudaMalloc(&d_pos_out, bytes));
  CUDA_CHECK(cudaMalloc(&d_vel_out, bytes));
  CUDA_CHECK(cudaMemcpy(d_pos_in, pos_in, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_vel_in, vel_in, bytes, cudaMemcpyHostToDevice));

  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  const double ms = median_time_ms(
      [&] {
        integrate_kernel<<<grid, block>>>(d_pos_in, d_vel_in, d_pos_out, d_vel_out, n);
        CUDA_CHECK(cudaGetLastError());
      },
      reps);

  CUDA_CHECK(cudaMemcpy(pos_out, d_pos_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(vel_out, d_vel_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_pos_in));
  CUDA_CHECK(cudaFree(d_vel_in));
  CUDA_CHECK(cudaFree(d_pos_out));
  CUDA_CHECK(cudaFree(d_vel_out));
  return ms;
}
