/*
 * app_kernels.cl - the host applications' own kernels (OpenCL C 1.2): the LSTM's gate
 * and output nonlinearities, bias broadcasts that prepare a GEMM's C, the FFN's GELU, the
 * attention softmax, and the plain residual add of the block's unfused variant. The matrix
 * products are CLBlast's and the normalizations clnorm's; these are the elementwise glue
 * between them. Each kernel checks its global id: launches are rounded up to the work-group.
 * `real` is float, or double when the program is built with -DAPP_F64 (--precision f64).
 */

#ifdef APP_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

inline real sigmoid_r(real v)
{
    return (real)1 / ((real)1 + exp(-v));
}

/* One LSTM step's cell update, per (sample r, unit j) of B x H:
 *   pre = ln_h[r] + gx[r] + b  (4H: i, f, g, o blocks of H)
 *   c = sigmoid(f) * c + sigmoid(i) * tanh(g)   (in place: c holds c_{t-1} on entry)
 *   so = sigmoid(o), kept for lstm_output after c_t is normalized. */
kernel void lstm_gates(global const real *ln_h, global const real *gx, ulong gx_offset,
                       global const real *b, global real *c, global real *so, uint batch,
                       uint hidden)
{
    size_t id = get_global_id(0);
    if (id >= (size_t)batch * hidden)
        return;
    size_t r = id / hidden, j = id % hidden;
    size_t row = r * 4 * (size_t)hidden;
    global const real *g = gx + gx_offset + row;
    real pi = ln_h[row + j] + g[j] + b[j];
    real pf = ln_h[row + hidden + j] + g[hidden + j] + b[hidden + j];
    real pg = ln_h[row + 2 * hidden + j] + g[2 * hidden + j] + b[2 * hidden + j];
    real po = ln_h[row + 3 * hidden + j] + g[3 * hidden + j] + b[3 * hidden + j];
    c[id] = sigmoid_r(pf) * c[id] + sigmoid_r(pi) * tanh(pg);
    so[id] = sigmoid_r(po);
}

/* The same cell update when the pre-activations are already summed: clnorm's LayerNorm of
 * W_h h added LN(W_x x_t) + b as its per-sample shift (the fused variant). */
kernel void lstm_cell(global const real *pre, global real *c, global real *so, uint batch,
                      uint hidden)
{
    size_t id = get_global_id(0);
    if (id >= (size_t)batch * hidden)
        return;
    size_t r = id / hidden, j = id % hidden;
    global const real *p = pre + r * 4 * (size_t)hidden;
    c[id] = sigmoid_r(p[hidden + j]) * c[id] + sigmoid_r(p[j]) * tanh(p[2 * hidden + j]);
    so[id] = sigmoid_r(p[3 * hidden + j]);
}

/* h_t = sigmoid(o) * tanh(LN(c_t)), written into the (T, B, H) output at h_offset, where the
 * next step's GEMM reads it as h_{t}. */
kernel void lstm_output(global const real *so, global const real *ln_c, global real *h,
                        ulong h_offset, uint n)
{
    size_t id = get_global_id(0);
    if (id >= n)
        return;
    h[h_offset + id] = so[id] * tanh(ln_c[id]);
}

/* y[r, j] = bias[j]: the C of a GEMM run with beta = 1 then holds x W^T + b. */
kernel void bias_rows(global real *y, global const real *bias, uint rows, uint cols)
{
    size_t id = get_global_id(0);
    if (id >= (size_t)rows * cols)
        return;
    y[id] = bias[id % cols];
}

/* y[r, j] = res[r, j] + bias[j]: the C of the last GEMM of a pre-LN block, whose output is the
 * residual stream plus the projection. */
kernel void bias_residual(global real *y, global const real *res, global const real *bias,
                          uint rows, uint cols)
{
    size_t id = get_global_id(0);
    if (id >= (size_t)rows * cols)
        return;
    y[id] = res[id] + bias[id % cols];
}

/* u = gelu(u + bias) in place, the exact erf form: v * (1 + erf(v / sqrt 2)) / 2. */
kernel void bias_gelu(global real *u, global const real *bias, uint rows, uint cols)
{
    size_t id = get_global_id(0);
    if (id >= (size_t)rows * cols)
        return;
    real v = u[id] + bias[id % cols];
    u[id] = (real)0.5 * v * ((real)1 + erf(v * (real)0.70710678118654752));
}

/* Softmax of each row of `rows` rows of t scores (row r is query r % t of its head), in place.
 * Causal: keys after the query get probability 0. One work-item per row: the rows are short
 * (t) and many (batch * heads * t). */
kernel void softmax_rows(global real *s, uint rows, uint t, int causal)
{
    size_t r = get_global_id(0);
    if (r >= rows)
        return;
    global real *p = s + r * (size_t)t;
    uint n = causal ? (uint)(r % t) + 1 : t;
    real m = p[0];
    for (uint k = 1; k < n; k++)
        m = fmax(m, p[k]);
    real sum = 0;
    for (uint k = 0; k < n; k++) {
        real e = exp(p[k] - m);
        p[k] = e;
        sum += e;
    }
    real inv = (real)1 / sum;
    for (uint k = 0; k < n; k++)
        p[k] *= inv;
    for (uint k = n; k < t; k++)
        p[k] = 0;
}

/* out = a + b, elementwise: the residual add of the unfused block, before a plain LayerNorm. */
kernel void add_rows(global real *out, global const real *a, global const real *b, uint n)
{
    size_t id = get_global_id(0);
    if (id >= n)
        return;
    out[id] = a[id] + b[id];
}
