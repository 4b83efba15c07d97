// Vertex transform over an array of structures: 512 Ki float4 points (x, y, z, w), each multiplied by a 4x4
// matrix (a rotation, a small translation and a slight projective row) and divided by its new w (the
// homogeneous normalization, w back to 1); 220 passes, each with its own matrix, in place. Four interleaved
// fields per element: straight-line code for the SLP vectorizer, a division per point (a reciprocal under
// -ffast-math). Kind: small matrix-vector (AoS float, 4x4 transform).
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

struct Vec4 {
    float x, y, z, w;
};

struct Mat4 {
    float m[4][4];  // row-major: out.row = m[row] . v
};

void transform(Vec4* v, int n, const Mat4& t) {
    for (int i = 0; i < n; ++i) {
        const Vec4 p = v[i];
        const float x = t.m[0][0] * p.x + t.m[0][1] * p.y + t.m[0][2] * p.z + t.m[0][3] * p.w;
        const float y = t.m[1][0] * p.x + t.m[1][1] * p.y + t.m[1][2] * p.z + t.m[1][3] * p.w;
        const float z = t.m[2][0] * p.x + t.m[2][1] * p.y + t.m[2][2] * p.z + t.m[2][3] * p.w;
        const float w = t.m[3][0] * p.x + t.m[3][1] * p.y + t.m[3][2] * p.z + t.m[3][3] * p.w;
        v[i] = Vec4{x / w, y / w, z / w, 1.0f};
    }
}

// A rotation about a random axis, a translation of up to 0.01 and a projective row (e, e, e, 1), |e| < 0.01.
static Mat4 random_matrix(uint64_t& s) {
    float ax = uniform_pm1(s), ay = uniform_pm1(s), az = uniform_pm1(s);
    const float len = std::sqrt(ax * ax + ay * ay + az * az) + 1e-6f;
    ax /= len;
    ay /= len;
    az /= len;
    const float angle = 3.0f * uniform_pm1(s), c = std::cos(angle), sn = std::sin(angle), k = 1.0f - c;
    Mat4 t = {{{c + ax * ax * k, ax * ay * k - az * sn, ax * az * k + ay * sn, 0.01f * uniform_pm1(s)},
               {ay * ax * k + az * sn, c + ay * ay * k, ay * az * k - ax * sn, 0.01f * uniform_pm1(s)},
               {az * ax * k - ay * sn, az * ay * k + ax * sn, c + az * az * k, 0.01f * uniform_pm1(s)},
               {0.01f * uniform_pm1(s), 0.01f * uniform_pm1(s), 0.01f * uniform_pm1(s), 1.0f}}};
    return t;
}

int main() {
    const int n = 1 << 19, passes = 220;
    std::vector<Vec4> pts(n);
    uint64_t seed = 26;
    for (auto& p : pts) p = Vec4{uniform_pm1(seed), uniform_pm1(seed), uniform_pm1(seed), 1.0f};
    std::vector<Mat4> mats(passes);
    for (auto& t : mats) t = random_matrix(seed);

    std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p) transform(pts.data(), n, mats[p]);
    auto t1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double checksum = 0.0;
    for (int i = 0; i < n; ++i)
        checksum += (1.0 + i % 7) * (pts[i].x + 2.0 * pts[i].y + 3.0 * pts[i].z + pts[i].w);
    std::printf("time_ms=%.4f\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("checksum=%.17g\n", checksum);
    std::fprintf(stderr, "cpu_ms=%.4f\n", 1000.0 * double(c1 - c0) / CLOCKS_PER_SEC);
    return 0;
}
