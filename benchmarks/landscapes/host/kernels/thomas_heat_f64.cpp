// Implicit (backward Euler) 1D heat equation in double: 8 independent rods of 2048 points, each with its own
// varying diffusivity, u = 1 at the left end and 0 at the right, a small source; every time step solves the
// 8 tridiagonal systems by the Thomas algorithm (a forward sweep with one division per point, then a back
// substitution). The systems are interleaved (point-major, rod-minor), so the rod loop is contiguous and
// vectorizable while each sweep is a serial chain along the rod. Kind: tridiagonal solve (double
// recurrences with division).
#include <chrono>
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
static double uniform01(uint64_t& s) {
    return static_cast<double>(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

constexpr int R = 8;  // rods, interleaved: element (i, r) at i * R + r

// One backward Euler step on every rod: -a_i u'_{i-1} + (1 + 2 a_i) u'_i - a_i u'_{i+1} = u_i + q_i for the
// interior points 1..n-2 (u'_0 and u'_{n-1} fixed, moved to the right-hand side); cp, dp: the sweep's
// scratch (dp starts as the right-hand side).
void heat_step(double* u, const double* coef, const double* src, double* cp, double* dp, int n) {
    for (size_t k = R; k < static_cast<size_t>(n - 1) * R; ++k) dp[k] = u[k] + src[k];
    for (int r = 0; r < R; ++r) {
        const size_t first = R + r, last = static_cast<size_t>(n - 2) * R + r;
        dp[first] += coef[first] * u[r];
        dp[last] += coef[last] * u[last + R];
        const double m = 1.0 / (1.0 + 2.0 * coef[first]);
        cp[first] = -coef[first] * m;
        dp[first] *= m;
    }
    for (int i = 2; i < n - 1; ++i) {  // forward sweep: a serial chain along each rod, 8 rods side by side
        for (int r = 0; r < R; ++r) {
            const size_t k = static_cast<size_t>(i) * R + r;
            const double a = coef[k];
            const double denom = (1.0 + 2.0 * a) + a * cp[k - R];
            cp[k] = -a / denom;
            dp[k] = (dp[k] + a * dp[k - R]) / denom;
        }
    }
    for (int r = 0; r < R; ++r) {
        const size_t k = static_cast<size_t>(n - 2) * R + r;
        u[k] = dp[k];
    }
    for (int i = n - 3; i >= 1; --i) {  // back substitution
        for (int r = 0; r < R; ++r) {
            const size_t k = static_cast<size_t>(i) * R + r;
            u[k] = dp[k] - cp[k] * u[k + R];
        }
    }
}

int main() {
    const int n = 2048, steps = 2800;
    const size_t size = static_cast<size_t>(n) * R;
    std::vector<double> u(size, 0.0), coef(size), src(size), cp(size), dp(size);
    uint64_t seed = 21;
    for (size_t k = 0; k < size; ++k) {
        coef[k] = 5.0 + 45.0 * uniform01(seed);  // dt * kappa / dx^2
        src[k] = 1e-3 * uniform01(seed);
        u[k] = uniform01(seed);
    }
    for (int r = 0; r < R; ++r) {
        u[r] = 1.0;                                   // left boundary
        u[static_cast<size_t>(n - 1) * R + r] = 0.0;  // right boundary
    }

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) heat_step(u.data(), coef.data(), src.data(), cp.data(), dp.data(), n);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (size_t k = 0; k < size; ++k) checksum += u[k] * (1.0 + static_cast<double>(k % 11));
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
