// nbody: one all-pairs softened gravitational n-body step in float on the GPU.
//
// Each thread owns one body i, accumulates its acceleration over all bodies j
// (shared-memory tiles of BLOCK bodies), then writes acc, v' = v + a*dt and
// x' = x + v'*dt to separate output buffers (inputs are never overwritten, so every
// launch does identical work and the result of the last launch can be verified).
//
// The inner loop uses 1.0f / sqrtf(r2) on purpose (no rsqrtf): IEEE division and
// square root are multi-instruction sequences by default, while --use_fast_math,
// --prec-div=false, --prec-sqrt=false, --ftz=true turn them into MUFU approximations.
//
// Output: one line "time_ms=<median kernel ms over --reps launches>" (cudaEvent timed,
// after one warm-up launch), then "PASS" or "FAIL" (exit code 1 on FAIL or CUDA error,
// 2 on bad options). Accelerations of a sample of bodies are checked against a CPU
// double-precision reference with relative tolerance 1e-3.

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),    \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                     \
      std::puts("FAIL");                                                              \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

constexpr int kBlock = 256;
constexpr float kSoftening2 = 1e-4f;
constexpr float kDt = 1e-3f;
constexpr double kTol = 1e-3;
constexpr int kSampleBodies = 256;

struct Options {
  long long n = 32768;
  long long reps = 20;
  unsigned long long seed = 12345;
};

void usage(const char* prog) {
  std::fprintf(stderr, "usage: %s [--n N (>=1)] [--reps R (>=1)] [--seed S]\n", prog);
}

bool parse_ll(const char* s, long long& out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: missing value for %s\n", a.c_str());
      return false;
    }
    long long v = 0;
    if (!parse_ll(argv[i + 1], v)) {
      std::fprintf(stderr, "error: bad integer '%s' for %s\n", argv[i + 1], a.c_str());
      return false;
    }
    ++i;
    if (a == "--n") {
      if (v < 1 || v > (1LL << 21)) {
        std::fprintf(stderr, "error: --n must be in [1, 2097152]\n");
        return false;
      }
      o.n = v;
    } else if (a == "--reps") {
      if (v < 1 || v > 100000) {
        std::fprintf(stderr, "error: --reps must be in [1, 100000]\n");
        return false;
      }
      o.reps = v;
    } else if (a == "--seed") {
      if (v < 0) {
        std::fprintf(stderr, "error: --seed must be >= 0\n");
        return false;
      }
      o.seed = static_cast<unsigned long long>(v);
    } else {
      std::fprintf(stderr, "error: unknown option %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

// splitmix64: deterministic across compilers and standard libraries.
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {  // [lo, hi)
    double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(lo + (hi - lo) * u);
  }
};

}  // namespace

// pos[i] = (x, y, z, mass), vel[i] = (vx, vy, vz, 0)
__global__ void __launch_bounds__(kBlock)
nbody_step(int n, float dt, const float4* __restrict__ pos, const float4* __restrict__ vel,
           float4* __restrict__ acc_out, float4* __restrict__ pos_out,
           float4* __restrict__ vel_out) {
  __shared__ float4 tile[kBlock];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 pi = (i < n) ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n; base += kBlock) {
    const int j = base + threadIdx.x;
    // padding bodies have zero mass and contribute nothing
    tile[threadIdx.x] = (j < n) ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    for (int k = 0; k < kBlock; ++k) {
      const float4 pj = tile[k];
      const float dx = pj.x - pi.x;
      const float dy = pj.y - pi.y;
      const float dz = pj.z - pi.z;
      const float r2 = dx * dx + dy * dy + dz * dz + kSoftening2;
      const float inv = 1.0f / sqrtf(r2);
      const float s = pj.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  if (i < n) {
    const float4 v = vel[i];
    const float vx = v.x + ax * dt, vy = v.y + ay * dt, vz = v.z + az * dt;
    acc_out[i] = make_float4(ax, ay, az, 0.f);
    vel_out[i] = make_float4(vx, vy, vz, 0.f);
    pos_out[i] = make_float4(pi.x + vx * dt, pi.y + vy * dt, pi.z + vz * dt, pi.w);
  }
}

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, opt)) {
    usage(argv[0]);
    return 2;
  }
  const int n = static_cast<int>(opt.n);
  const int reps = static_cast<int>(opt.reps);

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

  // ---------------------------------------------------------------- inputs
  Rng rng(opt.seed);
  std::vector<float4> h_pos(n), h_vel(n);
  const float mass_scale = 1.0f / static_cast<float>(n);  // total mass ~ 1
  for (int i = 0; i < n; ++i) {
    h_pos[i].x = rng.uniform(-1.f, 1.f);
    h_pos[i].y = rng.uniform(-1.f, 1.f);
    h_pos[i].z = rng.uniform(-1.f, 1.f);
    h_pos[i].w = rng.uniform(0.5f, 1.5f) * mass_scale;
    h_vel[i].x = rng.uniform(-0.1f, 0.1f);
    h_vel[i].y = rng.uniform(-0.1f, 0.1f);
    h_vel[i].z = rng.uniform(-0.1f, 0.1f);
    h_vel[i].w = 0.f;
  }

  const size_t bytes = static_cast<size_t>(n) * sizeof(float4);
  float4 *d_pos = nullptr, *d_vel = nullptr, *d_acc = nullptr, *d_pos_out = nullptr,
         *d_vel_out = nullptr;
  CUDA_CHECK(cudaMalloc(&d_pos, bytes));
  CUDA_CHECK(cudaMalloc(&d_vel, bytes));
  CUDA_CHECK(cudaMalloc(&d_acc, bytes));
  CUDA_CHECK(cudaMalloc(&d_pos_out, bytes));
  CUDA_CHECK(cudaMalloc(&d_vel_out, bytes));
  CUDA_CHECK(cudaMemcpy(d_pos, h_pos.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_vel, h_vel.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_acc, 0xFF, bytes));  // NaN pattern: unwritten output fails the check

  const dim3 block(kBlock);
  const dim3 grid(static_cast<unsigned>((n + kBlock - 1) / kBlock));

  // ---------------------------------------------------------------- timing
  nbody_step<<<grid, block>>>(n, kDt, d_pos, d_vel, d_acc, d_pos_out, d_vel_out);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  times.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(start));
    nbody_step<<<grid, block>>>(n, kDt, d_pos, d_vel, d_acc, d_pos_out, d_vel_out);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double median =
      (reps % 2) ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);

  std::vector<float4> h_acc(n), h_pos_out(n), h_vel_out(n);
  CUDA_CHECK(cudaMemcpy(h_acc.data(), d_acc, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_pos_out.data(), d_pos_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_vel_out.data(), d_vel_out, bytes, cudaMemcpyDeviceToHost));

  // ---------------------------------------------------------------- verification
  // Norm-wise relative error of the acceleration vector of a sample of bodies. The
  // denominator is floored at 1e-2 * sum_j |F_ij| so that a body whose forces nearly
  // cancel does not turn ordinary float rounding into a failure. The integrated
  // velocity and position are checked the same way against values built from the
  // reference acceleration.
  bool ok = true;
  double max_err_acc = 0.0, max_err_vel = 0.0, max_err_pos = 0.0;
  auto norm3 = [](double x, double y, double z) { return std::sqrt(x * x + y * y + z * z); };
  auto track = [&](double err, double& worst) {
    if (!(err <= kTol)) ok = false;  // also catches NaN
    if (!(err <= worst)) worst = err;
  };
  const int samples = std::min(n, kSampleBodies);
  for (int s = 0; s < samples; ++s) {
    const int i = static_cast<int>((static_cast<long long>(s) * n) / samples);
    const double xi = h_pos[i].x, yi = h_pos[i].y, zi = h_pos[i].z;
    double rx = 0.0, ry = 0.0, rz = 0.0, scale = 0.0;
    for (int j = 0; j < n; ++j) {
      const double dx = static_cast<double>(h_pos[j].x) - xi;
      const double dy = static_cast<double>(h_pos[j].y) - yi;
      const double dz = static_cast<double>(h_pos[j].z) - zi;
      const double d2 = dx * dx + dy * dy + dz * dz;
      const double inv = 1.0 / std::sqrt(d2 + static_cast<double>(kSoftening2));
      const double f = static_cast<double>(h_pos[j].w) * inv * inv * inv;
      rx += dx * f;
      ry += dy * f;
      rz += dz * f;
      scale += f * std::sqrt(d2);
    }
    const double acc_denom = std::max(norm3(rx, ry, rz), 1e-2 * scale);
    const double acc_diff = norm3(h_acc[i].x - rx, h_acc[i].y - ry, h_acc[i].z - rz);
    // acc_denom is 0 only for a lone body (n == 1): then compare absolutely
    track(acc_denom > 0.0 ? acc_diff / acc_denom : acc_diff, max_err_acc);

    const double dt = kDt;
    const double vx = h_vel[i].x + rx * dt, vy = h_vel[i].y + ry * dt, vz = h_vel[i].z + rz * dt;
    const double vel_scale = norm3(h_vel[i].x, h_vel[i].y, h_vel[i].z) + acc_denom * dt;
    track(norm3(h_vel_out[i].x - vx, h_vel_out[i].y - vy, h_vel_out[i].z - vz) / vel_scale,
          max_err_vel);
    const double px = xi + vx * dt, py = yi + vy * dt, pz = zi + vz * dt;
    const double pos_scale = norm3(xi, yi, zi) + vel_scale * dt;
    track(norm3(h_pos_out[i].x - px, h_pos_out[i].y - py, h_pos_out[i].z - pz) / pos_scale,
          max_err_pos);
  }

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_pos));
  CUDA_CHECK(cudaFree(d_vel));
  CUDA_CHECK(cudaFree(d_acc));
  CUDA_CHECK(cudaFree(d_pos_out));
  CUDA_CHECK(cudaFree(d_vel_out));

  std::printf("device=%s sm_%d%d n=%d reps=%d seed=%llu\n", prop.name, prop.major, prop.minor, n,
              reps, opt.seed);
  std::printf("interactions_per_s=%.3e\n",
              static_cast<double>(n) * static_cast<double>(n) / (median * 1e-3));
  std::printf("max_rel_err_acc=%.3e max_rel_err_vel=%.3e max_rel_err_pos=%.3e tol=%.1e\n",
              max_err_acc, max_err_vel, max_err_pos, kTol);
  std::printf("time_ms=%.6f\n", median);
  std::puts(ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
