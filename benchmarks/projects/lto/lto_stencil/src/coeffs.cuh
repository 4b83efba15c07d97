// Separable stencil weights, defined in coeffs.cu: __constant__ tables read through
// col_weight()/row_weight().
#pragma once

// Host: copies kWidth weights per axis into the constant tables.
void upload_weights(const float* wx, const float* wy);

// Device: weight of column offset dx / row offset dy in [-kRadius, kRadius]; cross-TU
// calls from stencil.cu (11 + 11 per output cell).
extern __device__ float col_weight(int dx);
extern __device__ float row_weight(int dy);
