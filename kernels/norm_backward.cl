/*
 * norm_backward.cl - gradients of LayerNorm and RMSNorm. Needs common.cl before it.
 *
 *   xhat = (x - mean) * rstd   (RMS: x * rstd),   g = dy * gamma
 *   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMS: no mean(g) term)
 *   dgamma = sum over rows of dy * xhat,   dbeta = sum over rows of dy
 *
 * norm_bwd_rows: work-group b takes the block of rows [b * rpg, (b + 1) * rpg). For each row
 *   its L items (L = 1 on CPUs) reduce mean(g) and mean(g * xhat), then, in a second sweep over
 *   the same (now cached) row, write dx and add dy * xhat and dy into the group's own partial
 *   rows part[b][0..cols) and part[b][cols..2 cols). A column always belongs to the same item
 *   (vector v = lid + k L), so the partials need no atomics, and dx and the partials come
 *   from one read of x and dy from memory. Few long rows are also cut into column chunks
 *   (a second NDRange dimension); their sums then come from norm_bwd_sums, merged in chunk
 *   order, and each chunk's group writes only its own columns of the partials.
 * norm_bwd_params: one work-item per column adds the groups' partials in group order (Kahan
 *   compensated): a fixed order, so dgamma and dbeta are the same bits run after run.
 */

#define GRAD_X 1u
#define GRAD_GAMMA 2u
#define GRAD_BETA 4u
#define BWD_HAS_GAMMA 8u
#define BWD_RMS 16u
#define BWD_RECOMPUTE 32u /* statistics from norm_bwd_stats, not from mean/rstd */

/*
 * A row's statistics as (K, m, rstd) with xhat = ((x - K) - m) * rstd. Saved statistics give
 * K = mean, m = 0 (RMS: K = 0). Recomputed ones (norm_bwd_stats) keep the forward's split:
 * K the row's first element and m the mean of x - K, so that large-mean rows lose nothing to
 * a mean rounded to P (a float32 mean of 1e6 + N(0,1) data is off by up to 0.03).
 */
inline void row_stats(__global const P *mean, ulong m_off, __global const P *rstd, ulong r_off,
                      __global const A *stats, ulong row, uint flags, A *K, A *m, A *rs)
{
    if ((flags & BWD_RECOMPUTE) != 0) {
        *K = stats[row * 3];
        *m = stats[row * 3 + 1];
        *rs = stats[row * 3 + 2];
    } else {
        *K = (flags & BWD_RMS) ? 0 : mean[m_off + row];
        *m = 0;
        *rs = rstd[r_off + row];
    }
}

/* Statistics of every row, shifted two-pass as in the forward, into stats[row * 3 + 0..2]
 * = (K, m, rstd): the backward pass without saved statistics. */
__kernel void norm_bwd_stats(__global const T *x, ulong x_off, ulong x_stride,
                             __global A *stats, ulong rows, ulong cols, A eps, uint flags,
                             __local A *scratch)
{
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        __global const T *xr = x + x_off + row * x_stride;
        A K = 0, m = 0;
        if ((flags & BWD_RMS) == 0) {
            K = LOAD1(xr);
            m = wg_sum(seg_sum_shift(xr, 0, cols, lid, L, K), scratch, lid, L) / (A)cols;
        }
        const A var = wg_sum(seg_sum_sq(xr, 0, cols, lid, L, K, m), scratch, lid, L) / (A)cols;
        if (lid == 0) {
            stats[row * 3] = K;
            stats[row * 3 + 1] = m;
            stats[row * 3 + 2] = rsqrt(var + eps);
        }
    }
}

/* Sums of g and g * xhat over the item's share of one row. */
inline void bwd_row_sums(__global const T *x, __global const T *dy, __global const P *gamma,
                         ulong cols, uint lid, uint L, A K, A m, A rs, int has_g, A *sum_g,
                         A *sum_gx)
{
    const ulong nv = cols / VW;
    A s1 = 0, c1 = 0, s2 = 0, c2 = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        AV a1 = (AV)(0), a2 = (AV)(0);
        for (ulong v = v0; v < vend; v += L) {
            const ulong i = v * VW;
            AV g = LOADV(dy + i);
            if (has_g)
                g *= LOADP(gamma + i);
            const AV xh = ((LOADV(x + i) - K) - m) * rs;
            a1 += g;
            a2 = fma(g, xh, a2);
        }
        kahan_add(&s1, &c1, HSUM(a1));
        kahan_add(&s2, &c2, HSUM(a2));
    }
    A t1 = 0, t2 = 0;
    for (ulong i = nv * VW + lid; i < cols; i += L) {
        A g = LOAD1(dy + i);
        if (has_g)
            g *= gamma[i];
        const A xh = ((LOAD1(x + i) - K) - m) * rs;
        t1 += g;
        t2 = fma(g, xh, t2);
    }
    kahan_add(&s1, &c1, t1);
    kahan_add(&s2, &c2, t2);
    *sum_g = s1;
    *sum_gx = s2;
}

/* Sums of g and g * xhat of every (row, chunk) into sums[(row * chunks + chunk) * 2 + 0/1]:
 * the first step when rows are cut into chunks (few long rows). */
__kernel void norm_bwd_sums(__global const T *x, ulong x_off, ulong x_stride,
                            __global const T *dy, ulong dy_off, ulong dy_stride,
                            __global const P *mean, ulong m_off,
                            __global const P *rstd, ulong r_off,
                            __global const P *gamma, ulong g_off,
                            __global const A *stats, __global A *sums, ulong rows, ulong cols,
                            ulong chunk_len, uint chunks, uint flags, __local A *scratch)
{
    const uint c = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    const int has_g = (flags & BWD_HAS_GAMMA) != 0;
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        A K, m, rs;
        row_stats(mean, m_off, rstd, r_off, stats, row, flags, &K, &m, &rs);
        A sg, sgx;
        bwd_row_sums(x + x_off + row * x_stride + b, dy + dy_off + row * dy_stride + b,
                     has_g ? gamma + g_off + b : 0, e - b, lid, L, K, m, rs, has_g, &sg, &sgx);
        sg = wg_sum(sg, scratch, lid, L);
        sgx = wg_sum(sgx, scratch, lid, L);
        if (lid == 0) {
            sums[(row * chunks + c) * 2] = sg;
            sums[(row * chunks + c) * 2 + 1] = sgx;
        }
    }
}

/* dx of element i and its share of the parameter partials (one element, or one vector). */
#define BWD_ELEM(i)                                                                         \
    do {                                                                                    \
        const A dyv = LOAD1(dyr + (i));                                                     \
        const A xh = ((LOAD1(xr + (i)) - K) - m) * rs;                                      \
        if (want_dx) {                                                                      \
            const A g = has_g ? dyv * gm[i] : dyv;                                          \
            STORE1(rs * ((g - mg) - xh * mgx), dxr + (i));                                  \
        }                                                                                   \
        if (want_dg)                                                                        \
            pg[i] = first ? dyv * xh : fma(dyv, xh, pg[i]);                                 \
        if (want_db)                                                                        \
            pb[i] = first ? dyv : dyv + pb[i];                                              \
    } while (0)

/*
 * Row block grp = get_group_id(1), chunk c = get_group_id(0) (columns [b, e)): for each row of
 * the block, the sums (computed here when the row is one chunk, else merged in chunk order
 * from norm_bwd_sums), then dx and the partials of the chunk's columns in one sweep.
 */
__kernel void norm_bwd_rows(__global const T *x, ulong x_off, ulong x_stride,
                            __global const T *dy, ulong dy_off, ulong dy_stride,
                            __global const P *mean, ulong m_off,
                            __global const P *rstd, ulong r_off,
                            __global const P *gamma, ulong g_off,
                            __global T *dx, ulong dx_off,
                            __global const A *stats, __global A *part, __global const A *sums,
                            ulong rows, ulong cols,
                            ulong rows_per_group, ulong chunk_len, uint chunks, uint flags,
                            __local A *scratch)
{
    const uint c = get_group_id(0);
    const ulong grp = get_group_id(1);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    const ulong r0 = grp * rows_per_group;
    const ulong r1 = min(rows, r0 + rows_per_group);
    const int want_dx = (flags & GRAD_X) != 0, want_dg = (flags & GRAD_GAMMA) != 0,
              want_db = (flags & GRAD_BETA) != 0, has_g = (flags & BWD_HAS_GAMMA) != 0,
              rms = (flags & BWD_RMS) != 0;
    __global A *pg = part + grp * 2 * cols;
    __global A *pb = pg + cols;
    __global const P *gm = has_g ? gamma + g_off : 0;
    for (ulong row = r0; row < r1; row++) {
        A K, m, rs;
        row_stats(mean, m_off, rstd, r_off, stats, row, flags, &K, &m, &rs);
        __global const T *xr = x + x_off + row * x_stride;
        __global const T *dyr = dy + dy_off + row * dy_stride;
        /* dx has x's layout; in place it is dy itself, which the caller checked has it too */
        __global T *dxr = want_dx ? dx + dx_off + row * x_stride : 0;
        A mg = 0, mgx = 0;
        if (want_dx) {
            A sg = 0, sgx = 0;
            if (chunks == 1) {
                bwd_row_sums(xr, dyr, gm, cols, lid, L, K, m, rs, has_g, &sg, &sgx);
                sg = wg_sum(sg, scratch, lid, L);
                sgx = wg_sum(sgx, scratch, lid, L);
            } else {
                A c1 = 0, c2 = 0;
                for (uint k = 0; k < chunks; k++) {
                    kahan_add(&sg, &c1, sums[(row * chunks + k) * 2]);
                    kahan_add(&sgx, &c2, sums[(row * chunks + k) * 2 + 1]);
                }
            }
            mg = rms ? 0 : sg / (A)cols;
            mgx = sgx / (A)cols;
        }
        const int first = row == r0; /* the group's first row initializes its partials */
        ulong i0 = b;
#ifdef STREAM_STORE
        /* One item per group (CPU): peel to the alignment the streaming stores need. With one
         * item the column-to-item mapping may move from row to row without any race. */
        const int stream = L == 1 && want_dx;
        if (stream)
            for (; i0 < e && ((ulong)(dxr + i0) % (VW * sizeof(T))) != 0; i0++)
                BWD_ELEM(i0);
#endif
        const ulong nv = (e - i0) / VW;
        for (ulong v = lid; v < nv; v += L) {
            const ulong i = i0 + v * VW;
            const AV dyv = LOADV(dyr + i);
            const AV xh = ((LOADV(xr + i) - K) - m) * rs;
            if (want_dx) {
                const AV g = has_g ? dyv * LOADP(gm + i) : dyv;
                const AV d = rs * ((g - mg) - xh * mgx);
#ifdef STREAM_STORE
                if (stream)
                    storev_stream(d, dxr + i);
                else
#endif
                    STOREV(d, dxr + i);
            }
#ifdef PREFETCH_NEXT
            if (L == 1 && row + 1 < r1) { /* the next row of this block, while this computes */
                __builtin_prefetch(xr + i + x_stride);
                __builtin_prefetch(dyr + i + dy_stride);
            }
#endif
            if (want_dg)
                CAT(vstore, VW)(first ? dyv * xh : fma(dyv, xh, CAT(vload, VW)(0, pg + i)), 0, pg + i);
            if (want_db)
                CAT(vstore, VW)(first ? dyv : dyv + CAT(vload, VW)(0, pb + i), 0, pb + i);
        }
        for (ulong i = i0 + nv * VW + lid; i < e; i += L)
            BWD_ELEM(i);
    }
}

__kernel void norm_bwd_params(__global const A *part, ulong groups, ulong cols,
                              __global P *dgamma, ulong dg_off, __global P *dbeta, ulong db_off,
                              uint flags)
{
    const ulong j = get_global_id(0);
    if (j >= cols)
        return;
    if ((flags & GRAD_GAMMA) != 0) {
        A s = 0, c = 0;
        for (ulong g = 0; g < groups; g++)
            kahan_add(&s, &c, part[g * 2 * cols + j]);
        dgamma[dg_off + j] = s;
    }
    if ((flags & GRAD_BETA) != 0) {
        A s = 0, c = 0;
        for (ulong g = 0; g < groups; g++)
            kahan_add(&s, &c, part[g * 2 * cols + cols + j]);
        dbeta[db_off + j] = s;
    }
}
