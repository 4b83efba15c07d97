// jacobi2d_f64: one weighted-Jacobi step for the 2D Poisson problem lap(u) = f, in double precision.
//
// Design: 2D grid of (32, 8) blocks, one thread per point:
//   u_new = u + w * (0.25 * (u_w + u_e + u_s + u_n - h2 * f) - u)   for interior points,
//   u_new = u                                                      on the boundary,
// computed in fp64 and stored as float32 (__double2float_rn).
// Default size: 8192 x 8192 (u and f fp64: 1 GiB read, 256 MiB written), grid 256 x 1024;
// ~0.27-0.35 ms on an H200: memory-bandwidth bound (the FP64 arithmetic is ~6 DFMA per point).
// Default build (-O3, sm_90): 22 registers, 0 spill stores/loads, no stack
// Requirements: grid covers nx x ny.

extern "C" __global__ void jacobi2d_f64(const double* u, const double* f, float* out, int nx, int ny,
                                        double h2, double w)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;

    const size_t i = (size_t)y * (size_t)nx + (size_t)x;
    const double c = u[i];
    double v = c;
    if (x > 0 && y > 0 && x < nx - 1 && y < ny - 1) {
        const double nb = (u[i - 1] + u[i + 1]) + (u[i - nx] + u[i + nx]);
        const double jac = 0.25 * (nb - h2 * f[i]);
        v = c + w * (jac - c);
    }
    out[i] = (float)v;
}
