// All-pairs gravitational n-body in float (structure of arrays): per body, the acceleration summed over all
// bodies with 1/sqrtf of the softened distance, then a leapfrog step. Kind: nbody (math: sqrt, division).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

static uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static float uniform_pm1(uint64_t& s) {
    return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

struct Bodies {
    std::vector<float> x, y, z, vx, vy, vz, m;
};

void accelerations(const Bodies& b, std::vector<float>& ax, std::vector<float>& ay, std::vector<float>& az,
                   float eps2) {
    const int n = static_cast<int>(b.x.size());
    for (int i = 0; i < n; ++i) {
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (int j = 0; j < n; ++j) {
            const float dx = b.x[j] - b.x[i];
            const float dy = b.y[j] - b.y[i];
            const float dz = b.z[j] - b.z[i];
            const float r2 = dx * dx + dy * dy + dz * dz + eps2;
            const float inv = 1.0f / std::sqrt(r2);
            const float s = b.m[j] * inv * inv * inv;
            sx += s * dx;
            sy += s * dy;
            sz += s * dz;
        }
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

int main() {
    const int n = 4096, steps = 4;
    const float dt = 1e-3f, eps2 = 1e-2f;
    Bodies b;
    for (auto* v : {&b.x, &b.y, &b.z, &b.vx, &b.vy, &b.vz, &b.m}) v->resize(n);
    uint64_t seed = 4;
    for (int i = 0; i < n; ++i) {
        b.x[i] = uniform_pm1(seed);
        b.y[i] = uniform_pm1(seed);
        b.z[i] = uniform_pm1(seed);
        b.vx[i] = 0.1f * uniform_pm1(seed);
        b.vy[i] = 0.1f * uniform_pm1(seed);
        b.vz[i] = 0.1f * uniform_pm1(seed);
        b.m[i] = (1.0f + 0.5f * uniform_pm1(seed)) / n;
    }
    std::vector<float> ax(n), ay(n), az(n);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        accelerations(b, ax, ay, az, eps2);
        for (int i = 0; i < n; ++i) {
            b.vx[i] += dt * ax[i];
            b.vy[i] += dt * ay[i];
            b.vz[i] += dt * az[i];
            b.x[i] += dt * b.vx[i];
            b.y[i] += dt * b.vy[i];
            b.z[i] += dt * b.vz[i];
        }
    }
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < n; ++i)
        checksum += b.x[i] + 2.0 * b.y[i] + 3.0 * b.z[i] + 100.0 * (b.vx[i] + b.vy[i] + b.vz[i]);
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
