// lbm_d2q9: one lattice-Boltzmann D2Q9 BGK collide-and-stream (push) step on a periodic nx x ny grid.
//
// Design: structure of arrays, plane q of the distributions at f[q * nx * ny + y * nx + x];
// directions 0:(0,0) 1:(1,0) 2:(0,1) 3:(-1,0) 4:(0,-1) 5:(1,1) 6:(-1,1) 7:(-1,-1) 8:(1,-1),
// weights 4/9, 1/9, 1/36. One thread per cell (block 128 x 2): load 9 values, compute rho and u,
// relax toward the equilibrium with rate omega, and push each post-collision value to the periodic
// neighbour (x + cx, y + cy) in plane q of fout. Every output element is written exactly once (the
// streaming map is a permutation of each plane).
// Default size: 4096 x 4096 (9 planes: 576 MiB read + 576 MiB written), grid 32 x 2048;
// ~0.25-0.35 ms on an H200: memory-bandwidth bound (~80 flops per cell).
// Default build (-O3, sm_90): 40 registers, 0 spill stores/loads, no stack
// Requirements: grid covers nx x ny.

extern "C" __global__ void lbm_d2q9(const float* f, float* fout, int nx, int ny, float omega)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;

    const size_t N = (size_t)nx * (size_t)ny;
    const size_t c = (size_t)y * (size_t)nx + (size_t)x;

    const float f0 = f[c];
    const float f1 = f[1 * N + c];
    const float f2 = f[2 * N + c];
    const float f3 = f[3 * N + c];
    const float f4 = f[4 * N + c];
    const float f5 = f[5 * N + c];
    const float f6 = f[6 * N + c];
    const float f7 = f[7 * N + c];
    const float f8 = f[8 * N + c];

    const float rho = ((f0 + f1) + (f2 + f3)) + ((f4 + f5) + (f6 + f7)) + f8;
    const float inv_rho = 1.0f / rho;
    const float ux = ((f1 + f5 + f8) - (f3 + f6 + f7)) * inv_rho;
    const float uy = ((f2 + f5 + f6) - (f4 + f7 + f8)) * inv_rho;
    const float usq = 1.5f * (ux * ux + uy * uy);

    const float w0 = 4.0f / 9.0f * rho;
    const float w1 = 1.0f / 9.0f * rho;
    const float w5 = 1.0f / 36.0f * rho;

    // feq_q = w_q rho (1 + 3 cu + 4.5 cu^2 - 1.5 u^2)
    const float e0 = w0 * (1.0f - usq);
    float cu;
    cu = ux;        const float e1 = w1 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = uy;        const float e2 = w1 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = -ux;       const float e3 = w1 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = -uy;       const float e4 = w1 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = ux + uy;   const float e5 = w5 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = -ux + uy;  const float e6 = w5 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = -ux - uy;  const float e7 = w5 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);
    cu = ux - uy;   const float e8 = w5 * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq);

    const int xp = (x + 1 == nx) ? 0 : x + 1;
    const int xm = (x == 0) ? nx - 1 : x - 1;
    const int yp = (y + 1 == ny) ? 0 : y + 1;
    const int ym = (y == 0) ? ny - 1 : y - 1;
    const size_t row = (size_t)y * (size_t)nx;
    const size_t rowp = (size_t)yp * (size_t)nx;
    const size_t rowm = (size_t)ym * (size_t)nx;

    fout[c]                 = f0 - omega * (f0 - e0);
    fout[1 * N + row + xp]  = f1 - omega * (f1 - e1);
    fout[2 * N + rowp + x]  = f2 - omega * (f2 - e2);
    fout[3 * N + row + xm]  = f3 - omega * (f3 - e3);
    fout[4 * N + rowm + x]  = f4 - omega * (f4 - e4);
    fout[5 * N + rowp + xp] = f5 - omega * (f5 - e5);
    fout[6 * N + rowp + xm] = f6 - omega * (f6 - e6);
    fout[7 * N + rowm + xm] = f7 - omega * (f7 - e7);
    fout[8 * N + rowm + xp] = f8 - omega * (f8 - e8);
}
