// nbody_f64_tiles: all-pairs gravitational accelerations in double precision.
//
// Design: block (64, 4): 64 target bodies i per block, the 4 threadIdx.y groups split the source
// bodies. Each iteration the 256 threads load a 256-body tile (x, y, z, m; fp64) into static shared
// memory; group ty handles tile bodies [64*ty, 64*ty + 64) for its body i (shared reads are
// warp-wide broadcasts). Per pair: r2 = |d|^2 + eps2, inv = 1.0 / sqrt(r2) (IEEE fp64 sqrt and
// division, no rsqrt), a += m * inv^3 * d. The 4 partial sums are combined in a fixed order through
// shared memory (deterministic) and stored as float32: out[3*i + c].
// Default size: n = 16384 (2.7e8 pair interactions), grid 256 x (64, 4) threads; ~0.6-1.5 ms on an
// H200: FP64 pipe bound (the fp64 sqrt and division sequences dominate: ~35 DFMA-class ops/pair).
// Default build (-O3, sm_90): 58 registers, 0 spill stores/loads, no stack; 14 KiB static shared (-maxrregcount=32 spills 208 B)
// Requirements: blockDim == (64, 4); grid.x * 64 >= n; pos holds 4*n doubles (x, y, z, m).

#define NB_TILE 256
#define NB_IBLK 64
#define NB_JSPLIT 4

extern "C" __global__ void nbody_f64_tiles(const double* pos, float* out, int n, double eps2)
{
    __shared__ double sx[NB_TILE];
    __shared__ double sy[NB_TILE];
    __shared__ double sz[NB_TILE];
    __shared__ double sm[NB_TILE];
    __shared__ double rx[NB_JSPLIT][NB_IBLK];
    __shared__ double ry[NB_JSPLIT][NB_IBLK];
    __shared__ double rz[NB_JSPLIT][NB_IBLK];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * NB_IBLK + tx;
    const int i = blockIdx.x * NB_IBLK + tx;
    const bool active = i < n;

    double xi = 0.0, yi = 0.0, zi = 0.0;
    if (active) {
        xi = pos[4 * (size_t)i + 0];
        yi = pos[4 * (size_t)i + 1];
        zi = pos[4 * (size_t)i + 2];
    }
    double ax = 0.0, ay = 0.0, az = 0.0;

    for (int base = 0; base < n; base += NB_TILE) {
        const int j = base + tid;
        if (j < n) {
            sx[tid] = pos[4 * (size_t)j + 0];
            sy[tid] = pos[4 * (size_t)j + 1];
            sz[tid] = pos[4 * (size_t)j + 2];
            sm[tid] = pos[4 * (size_t)j + 3];
        } else {                                  // padding body: zero mass contributes nothing
            sx[tid] = 0.0;
            sy[tid] = 0.0;
            sz[tid] = 0.0;
            sm[tid] = 0.0;
        }
        __syncthreads();

        const int k0 = ty * (NB_TILE / NB_JSPLIT);
        for (int k = k0; k < k0 + NB_TILE / NB_JSPLIT; ++k) {
            const double dx = sx[k] - xi;
            const double dy = sy[k] - yi;
            const double dz = sz[k] - zi;
            const double r2 = dx * dx + dy * dy + dz * dz + eps2;
            const double inv = 1.0 / sqrt(r2);
            const double s = sm[k] * (inv * inv * inv);
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        __syncthreads();
    }

    rx[ty][tx] = ax;
    ry[ty][tx] = ay;
    rz[ty][tx] = az;
    __syncthreads();

    if (ty == 0 && active) {
        double sxa = rx[0][tx], sya = ry[0][tx], sza = rz[0][tx];
#pragma unroll
        for (int g = 1; g < NB_JSPLIT; ++g) {
            sxa += rx[g][tx];
            sya += ry[g][tx];
            sza += rz[g][tx];
        }
        out[3 * (size_t)i + 0] = (float)sxa;
        out[3 * (size_t)i + 1] = (float)sya;
        out[3 * (size_t)i + 2] = (float)sza;
    }
}
