/*
 * norm_subgroup.cl - strategy "subgroup": SEG consecutive work-items (a warp on NVIDIA,
 * SEG = 32; a wavefront on AMD, SEG = 64) share one row, and a work-group holds
 * L / SEG rows. Each item keeps its share of the row in registers (REG_VECS vectors of VW, set
 * per plan from cols), so the row is read from memory once and the mean, variance and apply
 * passes all run from registers. For GPUs and rows up to SEG * VW * 16 elements. Reductions
 * go through local memory within each SEG-lane segment (portable OpenCL 1.2: no sub-group
 * extension needed), with work-group barriers, which every item reaches (rows past the end
 * take part with empty shares). Needs common.cl before it.
 */
#ifndef SEG
#define SEG 32
#endif
#ifndef REG_VECS
#define REG_VECS 4
#endif

/* Sum over the SEG lanes of one segment; SEG is a power of two. Every item of the group must
 * call it. */
inline A seg_lane_sum(A v, __local A *scratch, uint lid, uint lane)
{
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = SEG / 2; h > 0; h >>= 1) {
        if (lane < h)
            scratch[lid] += scratch[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const A r = scratch[lid - lane];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

__kernel void norm_subgroup(__global const T *x, ulong x_off, ulong x_stride,
                            __global T *y, ulong y_off, ulong y_stride,
                            __global const P *gamma, ulong g_off,
                            __global const P *beta, ulong b_off,
                            __global P *mean, ulong m_off,
                            __global P *rstd, ulong r_off,
                            ulong rows, ulong cols, A eps, uint flags,
                            __local A *scratch)
{
    const uint lid = get_local_id(0);
    const uint lane = lid % SEG;
    const ulong rows_per_group = get_local_size(0) / SEG;
    const ulong nv = cols / VW;           /* whole vectors in a row */
    const ulong tail0 = nv * VW;          /* first element after them */
    const int rms = (flags & FLAG_RMS) != 0;
    const int has_g = (flags & FLAG_GAMMA) != 0, has_b = (flags & FLAG_BETA) != 0;
    for (ulong base = get_group_id(0) * rows_per_group; base < rows;
         base += get_num_groups(0) * rows_per_group) {
        const ulong row = base + lid / SEG;
        const int active = row < rows;
        __global const T *xr = x + x_off + (active ? row : 0) * x_stride;
        const A K = (active && !rms) ? LOAD1(xr) : 0;

        /* Load the share once: vectors lane, lane + SEG, ...; tail elements one per lane. */
        AV v[REG_VECS];
        A s = 0;
        for (uint k = 0; k < REG_VECS; k++) {
            const ulong vi = lane + (ulong)k * SEG;
            v[k] = (active && vi < nv) ? LOADV(xr + vi * VW) - K : (AV)(0);
            s += HSUM(v[k]);
        }
        const ulong ti = tail0 + lane;
        A t = (active && lane < VW && ti < cols) ? LOAD1(xr + ti) - K : 0;
        s += t;

        A m = 0;
        if (!rms)
            m = seg_lane_sum(s, scratch, lid, lane) / (A)cols;
        /* Squared deviations; entries past the row are 0 - m: leave them out. */
        AV q = (AV)(0);
        for (uint k = 0; k < REG_VECS; k++) {
            const ulong vi = lane + (ulong)k * SEG;
            if (vi < nv) {
                const AV d = v[k] - m;
                q = fma(d, d, q);
            }
        }
        A qs = HSUM(q);
        if (lane < VW && ti < cols)
            qs = fma(t - m, t - m, qs);
        const A var = seg_lane_sum(qs, scratch, lid, lane) / (A)cols;
        const A r = rsqrt(var + eps);
        if (active) { /* past the last barrier: rows beyond the end just skip the writes */
            if (lane == 0)
                store_stats((flags & FLAG_MEAN) ? mean + m_off : 0,
                            (flags & FLAG_RSTD) ? rstd + r_off : 0, row, K, m, r, flags);
            __global T *yr = y + y_off + row * y_stride;
            __global const P *gm = has_g ? gamma + g_off : 0;
            __global const P *bt = has_b ? beta + b_off : 0;
            for (uint k = 0; k < REG_VECS; k++) {
                const ulong vi = lane + (ulong)k * SEG;
                if (vi < nv) {
                    AV o = (v[k] - m) * r;
                    if (has_g)
                        o *= LOADP(gm + vi * VW);
                    if (has_b)
                        o += LOADP(bt + vi * VW);
                    STOREV(o, yr + vi * VW);
                }
            }
            if (lane < VW && ti < cols) {
                A o = (t - m) * r;
                if (has_g)
                    o *= gm[ti];
                if (has_b)
                    o += bt[ti];
                STORE1(o, yr + ti);
            }
        }
    }
}
