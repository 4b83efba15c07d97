// Force helpers defined in forces.cu. The kernel in integrate.cu only sees these
// declarations, so with relocatable device code each use is a real call across
// translation units unless device LTO inlines it at link time.
#pragma once

extern __device__ float spring_force(float x);   // -x*(K1 + K3*x^2): polynomial step
extern __device__ float drag_force(float v);     // -kDrag*v*(1+|v|)
extern __device__ float clamp_speed(float v);    // clamp to [-kVmax, kVmax]
extern __device__ float central_pull(float r2);  // G*(r2+eps^2)^(-3/2)
