/*
 * norm_subgroup.cl - strategy "subgroup": SEG consecutive work-items (a warp on NVIDIA,
 * SEG = 32; a wavefront on AMD, SEG = 64) share one row, and a work-group holds L / SEG rows.
 * Each item keeps its share of the row in registers (REG_VECS vectors of VW, set per plan
 * from cols), so the row is read from memory once and the mean, variance and apply passes all
 * run from registers. For GPUs and rows up to SEG * VW * 16 elements. Reductions go through
 * local memory within each SEG-lane segment (portable OpenCL 1.2: no sub-group extension
 * needed), with work-group barriers, which every item reaches (rows past the end take part
 * with empty shares).
 * A row whose squares overflow (|x| above about 1e19 in float) is loaded again scaled by a
 * power of two. Whether any row of the group needs that is agreed on through local memory, so
 * that every item takes the same path and reaches the same barriers; the rows that do not
 * need it redo exactly what they did (scale 1), bit for bit.
 * Needs common.cl, an op_*.cl and row_stats.cl before it.
 */
#ifndef SEG
#define SEG 32
#endif
#ifndef REG_VECS
#define REG_VECS 4
#endif

/* Sum (op 0) or maximum (op 1) over the SEG lanes of one segment; SEG is a power of two.
 * Every item of the group must call it. */
inline A seg_lane_reduce(A v, __local A *scratch, uint lid, uint lane, int op)
{
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = SEG / 2; h > 0; h >>= 1) {
        if (lane < h)
            scratch[lid] = op ? fmax(scratch[lid], scratch[lid + h]) : scratch[lid] + scratch[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const A r = scratch[lid - lane];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Any item's flag set? Every item of the group must call it. */
inline int group_any(int flag, __local A *scratch, uint lid)
{
    if (lid == 0)
        scratch[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (flag)
        scratch[0] = 1; /* every writer writes the same value */
    barrier(CLK_LOCAL_MEM_FENCE);
    const int any = scratch[0] != (A)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    return any;
}

__kernel void norm_subgroup(FWD_PARAMS, ulong rows, ulong cols, A eps, uint flags,
                            __local A *scratch)
{
    const uint lid = get_local_id(0);
    const uint lane = lid % SEG;
    const ulong rows_per_group = get_local_size(0) / SEG;
    const ulong nv = cols / VW;  /* whole vectors in a row */
    const ulong tail0 = nv * VW; /* first element after them */
    const int rms = (flags & CLNORM_KF_RMS) != 0;
    const ulong ti = tail0 + lane; /* this lane's tail element, when lane < VW */
    const int has_tail = lane < VW && ti < cols;
    for (ulong base = get_group_id(0) * rows_per_group; base < rows;
         base += get_num_groups(0) * rows_per_group) {
        const ulong row = base + lid / SEG;
        const int active = row < rows;
        const row_in in = make_row_in(IN_ARGS, active ? row : 0);
        A sc = 1, m = 0, var = 0;
        A2 K = (A2)(0);
        AV v[REG_VECS];
        A t = 0;
        for (int attempt = 0; attempt < 2; attempt++) {
            if (active)
                K = row_shift(in, sc, rms);
            /* Load the share once: vectors lane, lane + SEG, ...; tail elements one per lane. */
            A s = 0;
            for (uint k = 0; k < REG_VECS; k++) {
                const ulong vi = lane + (ulong)k * SEG;
                v[k] = (active && vi < nv) ? IN_DEVV(in, vi * VW, K, sc) : (AV)(0);
                s += HSUM(v[k]);
            }
            t = (active && has_tail) ? IN_DEV1(in, ti, K, sc) : 0;
            s += t;
            m = 0;
            if (!rms)
                m = seg_lane_reduce(s, scratch, lid, lane, 0) / (A)cols;
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
            if (has_tail)
                qs = fma(t - m, t - m, qs);
            var = seg_lane_reduce(qs, scratch, lid, lane, 0) / (A)cols;
            const int bad = active && needs_rescale(var);
            if (attempt == 1 || !group_any(bad, scratch, lid))
                break;
            /* The largest magnitude of each row; rows that do not need it keep scale 1. */
            A mx = 0;
            for (uint k = 0; k < REG_VECS; k++) {
                const ulong vi = lane + (ulong)k * SEG;
                if (active && vi < nv)
                    mx = fmax(mx, HMAX(IN_ABSMAXV(in, vi * VW)));
            }
            if (active && has_tail)
                mx = fmax(mx, IN_ABSMAX1(in, ti));
            mx = seg_lane_reduce(mx, scratch, lid, lane, 1);
            sc = bad ? rescale_factor(mx) : (A)1;
        }
        const A r = rsqrt(var + eps * sc * sc);
        if (active) { /* past the last barrier: rows beyond the end just skip the writes */
            if (lane == 0)
                store_stats(FWD_MEAN, FWD_RSTD, row, K, m, r, sc, flags);
            const row_out out = make_row_out(FWD_OUT_ARGS, row, flags);
            for (uint k = 0; k < REG_VECS; k++) {
                const ulong vi = lane + (ulong)k * SEG;
                if (vi < nv) {
                    out_sumv(out, in, vi * VW);
                    STOREV(out_yv(out, vi * VW, v[k], m, r), out.y + vi * VW);
                }
            }
            if (has_tail) {
                out_sum1(out, in, ti);
                STORE1(out_y1(out, ti, t, m, r), out.y + ti);
            }
        }
    }
}
