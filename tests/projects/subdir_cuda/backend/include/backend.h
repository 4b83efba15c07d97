#pragma once
#ifdef __cplusplus
extern "C" {
#endif
// Runs the backend's kernels `repeats` times on `n` values; returns 0 when the result checks, its milliseconds in *ms.
int backend_run(int n, int repeats, double* ms);
#ifdef __cplusplus
}
#endif
