// Parameters and host API of the particles benchmark. Plain C++: included by the
// g++-compiled main.cpp/ref.cpp and by the nvcc-compiled .cu files.
#pragma once
#include <cstddef>

constexpr int kSteps = 256;         // integration steps per particle per launch
constexpr float kDt = 0.01f;        // time step
constexpr float kSpringK1 = 1.0f;   // per-axis restoring force -x*(K1 + K3*x^2)
constexpr float kSpringK3 = 0.5f;
constexpr float kDrag = 0.05f;      // per-axis drag -kDrag*v*(1+|v|)
constexpr float kVmax = 2.0f;       // per-axis speed limit
constexpr float kPullG = 0.5f;      // softened central pull G*(r^2+eps^2)^(-3/2)
constexpr float kSoft2 = 0.25f;

// Particle layout: pos = (x, y, z, inverse mass), vel = (vx, vy, vz, 0), 4 floats each.
// Integrates n particles for kSteps steps on the GPU, reps timed launches after 2
// warm-ups; writes the final state to pos_out/vel_out and returns the median kernel ms.
double gpu_integrate(const float* pos_in, const float* vel_in, float* pos_out,
                     float* vel_out, std::size_t n, int reps);

// CPU double-precision reference for one particle (same layout, xyz outputs).
void ref_integrate(const float pos[4], const float vel[4], double pos_out[3],
                   double vel_out[3]);
