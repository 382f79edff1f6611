/*
 * norm_subgroup.cl - strategy "subgroup": SEG consecutive work-items (a warp on NVIDIA,
 * SEG = 32; a wavefront on AMD, SEG = 64) share one row, and a work-group holds L / SEG rows.
 * Each item keeps its share of the row in registers (REG_VECS vectors of VW, set per plan
 * from cols), so the row is read from memory once and the mean, variance and apply passes all
 * run from registers. For GPUs and rows up to SEG * VW * 16 elements, and on CPU devices for
 * short rows with SEG = 1 (whole rows per work-item, ITEM_ROWS of them side by side: no
 * reduction to share, no barrier, streaming stores and a prefetch of the next rows as the row
 * strategy has). Reductions go through local memory within each SEG-lane segment (portable
 * OpenCL 1.2: no sub-group extension needed), with work-group barriers, which every item
 * reaches (rows past the end take part with empty shares); on NVIDIA's own OpenCL
 * (-DCLNORM_NV_SHFL, src/policy.c) a warp's share is added with shfl.sync instead, without a
 * barrier.
 * A row whose squares overflow (|x| above about 1e19 in float) is loaded again scaled by a
 * power of two. Whether any row of the group needs that is agreed on through local memory, so
 * that every item takes the same path and reaches the same barriers; the rows that do not
 * need it redo exactly what they did (scale 1), bit for bit.
 * With CLNORM_KF_ALIGNED (every row and parameter vector on a vector boundary) the rows are
 * read and written with aligned vector accesses (common.cl, LOADV_AL): the kernel runs one of
 * two copies of its body, chosen once per launch, so each copy's loads stay plain loads that
 * the compiler can issue all at once.
 * Needs common.cl, an op_*.cl and row_stats.cl before it.
 */
#ifndef SEG
#define SEG 32
#endif
#ifndef REG_VECS
#define REG_VECS 4
#endif

/* Whether vector vi of a row exists: always with one item per row, whose REG_VECS is the
 * row's exact count of whole vectors (src/policy.c, subgroup_seg) - a constant the compiler
 * can fold. */
#if SEG == 1
#define HAS_VEC(vi) 1
#else
#define HAS_VEC(vi) ((vi) < nv)
#endif

inline A red2(A a, A b, int op) { return op ? fmax(a, b) : a + b; }

#if defined(CLNORM_NV_SHFL) && SEG >= 32 && !defined(CLNORM_F64)
/* One step of a warp's butterfly (inline PTX, which NVIDIA's OpenCL compiles). Lane l adds
 * its value and lane l ^ m's, lane l ^ m the same two the other way round: the same bits, so
 * after the five steps every lane of the warp holds the same sum. */
inline float nv_bfly(float v, uint m)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}
#define SEG_WARP_SHFL 1
#endif

#if SEG > 32
/* A segment of several 32-lane chunks, each lane holding its chunk's result: the chunk
 * results folded in chunk order through local memory, the same bits on every lane. */
inline A seg_fold_chunks(A v, __local A *scratch, uint lid, uint lane, int op)
{
    if (lane % 32 == 0)
        scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint base = lid - lane;
    v = scratch[base];
    for (uint j = 32; j < SEG; j += 32)
        v = red2(v, scratch[base + j], op);
    return v;
}
#endif

/* Sum (op 0) or maximum (op 1) over the SEG lanes of one segment; SEG is a power of two.
 * Every item of the group must call it. Every lane gets the same bits: the values are folded
 * in one fixed order (not a tree over barriers, which cost one barrier per halving). */
inline A seg_lane_reduce(A v, __local A *scratch, uint lid, uint lane, int op)
{
#if SEG == 1
    return v; /* a row per item (CPU devices, short rows): nothing to share, no barrier */
#elif defined(SEG_WARP_SHFL)
    for (uint m = 16; m > 0; m >>= 1)
        v = red2(v, nv_bfly(v, m), op);
#if SEG > 32
    v = seg_fold_chunks(v, scratch, lid, lane, op); /* then the SEG / 32 warp sums */
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    return v;
#else
    /* Chunks of up to 32 lanes: each lane reads its chunk's values (the same addresses for
     * the whole chunk: broadcasts) and folds them in two interleaved chains. */
    const uint chunk = SEG < 32 ? SEG : 32;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    __local const A *c = scratch + (lid - lane % chunk);
    A a = c[0];
    if (chunk > 1) {
        A b = c[1];
        for (uint j = 2; j < chunk; j += 2) {
            a = red2(a, c[j], op);
            b = red2(b, c[j + 1], op);
        }
        a = red2(a, b, op);
    }
#if SEG > 32
    barrier(CLK_LOCAL_MEM_FENCE); /* every chunk read before its first lane overwrites it */
    a = seg_fold_chunks(a, scratch, lid, lane, op);
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused right after */
    return a;
#endif
}

/* Any item's flag set, for the group's it-th row iteration? Every item of the group must call
 * it, as often as the others in each iteration (once, or twice for an iteration that redoes
 * its rows at a scale: the second call finds the slot the first set). One barrier: iteration
 * it uses slot it % 3, which item 0 cleared during iteration it - 2, after that iteration's
 * barrier (every item had read slot (it - 3) % 3 by then) and before the barrier of
 * iteration it - 1 (which every writer of iteration it has passed). */
inline int group_any(int flag, volatile __local int *slots, uint it, uint lid)
{
    if (flag)
        slots[it % 3] = 1; /* every writer writes the same value */
    barrier(CLK_LOCAL_MEM_FENCE);
    const int any = slots[it % 3];
    if (lid == 0)
        slots[(it + 2) % 3] = 0;
    return any;
}

/* Rows per item: ITEM_ROWS consecutive rows for an item that holds whole rows (SEG = 1, CPU
 * devices; src/policy.c sets it), run in lockstep, else 1. One row's statistics are a chain
 * of dependent steps (sums, a horizontal sum, a division, squares, another horizontal sum and
 * division, a square root and a division), and PoCL runs a group's items one after the other:
 * independent chains side by side (two; four for rows of one vector) let the core overlap
 * them. */
#ifndef ITEM_ROWS
#define ITEM_ROWS 1
#endif
#if ITEM_ROWS > 1 && SEG > 1
#error "ITEM_ROWS > 1 needs SEG == 1"
#endif

/* The rows of one work-group; al: every row and parameter vector is aligned (a constant at
 * both call sites, so each copy keeps only its own loads). Every loop over an item's rows (j)
 * or registers (k) is unrolled: the arrays they index then live in registers. */
inline void subgroup_rows(FWD_PARAMS, ulong rows, ulong cols, A eps, uint flags,
                          __local A *scratch, volatile __local int *any_slots, const int al)
{
    const uint lid = get_local_id(0);
    const uint lane = lid % SEG;
    const ulong rows_per_group = get_local_size(0) / SEG * ITEM_ROWS;
    const ulong nv = cols / VW;  /* whole vectors in a row */
    const ulong tail0 = nv * VW; /* first element after them */
    const int rms = (flags & CLNORM_KF_RMS) != 0;
    const ulong ti = tail0 + lane; /* this lane's tail element, when lane < VW */
    const int has_tail = lane < VW && ti < cols;
    uint it = 0;
    for (ulong base = get_group_id(0) * rows_per_group; base < rows;
         base += get_num_groups(0) * rows_per_group, it++) {
        const ulong row0 = base + lid / SEG * ITEM_ROWS;
        int active[ITEM_ROWS];
        row_in in[ITEM_ROWS];
#if defined(PREFETCH_NEXT) && SEG == 1
        row_in nxt[ITEM_ROWS];
#endif
        A sc[ITEM_ROWS], m[ITEM_ROWS], var[ITEM_ROWS], t[ITEM_ROWS];
        A2 K[ITEM_ROWS];
        AV v[ITEM_ROWS][REG_VECS];
#if defined(CLNORM_RESIDUAL)
        /* x + residual as the sum output stores it, kept from the same loads rather than
         * reading both inputs again for the store. */
        AV sv[ITEM_ROWS][REG_VECS];
#endif
        UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
            active[j] = row0 + j < rows;
            in[j] = make_row_in(IN_ARGS, active[j] ? row0 + j : 0);
            in[j].al = al;
#if defined(PREFETCH_NEXT) && SEG == 1
            nxt[j] = make_row_in(IN_ARGS, row0 + ITEM_ROWS + j);
#endif
            sc[j] = 1;
            K[j] = (A2)(0);
        }
        for (int attempt = 0; attempt < 2; attempt++) {
            /* Load the share once: vectors lane, lane + SEG, ...; tail elements one per lane. */
            A s[ITEM_ROWS];
            UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
                if (active[j])
                    K[j] = row_shift(in[j], cols, sc[j], rms);
                AV sum = (AV)(0);
                UNROLL for (uint k = 0; k < REG_VECS; k++) {
                    const ulong vi = lane + (ulong)k * SEG;
                    const int here = active[j] && HAS_VEC(vi);
#if defined(CLNORM_RESIDUAL)
                    const AV xv = here ? LOADV_AL(in[j].x + vi * VW, al) : (AV)(0);
                    const AV rv = here ? LOADV_R_AL(in[j].r + vi * VW, al) : (AV)(0);
                    v[j][k] = here ? (xv * sc[j] - K[j].s0) + (rv * sc[j] - K[j].s1)
                                   : (AV)(0); /* = IN_DEVV */
                    sv[j][k] = xv + rv;
#else
                    v[j][k] = here ? IN_DEVV(in[j], vi * VW, K[j], sc[j]) : (AV)(0);
#endif
                    sum += v[j][k];
#if defined(PREFETCH_NEXT) && SEG == 1
                    /* PoCL runs the next item, the next rows in memory, right after this one
                     * on the same core: fetch them while these compute (never faults). */
                    __builtin_prefetch(nxt[j].x + vi * VW);
#if defined(CLNORM_RESIDUAL)
                    __builtin_prefetch(nxt[j].r + vi * VW);
#endif
#endif
                }
                t[j] = (active[j] && has_tail) ? IN_DEV1(in[j], ti, K[j], sc[j]) : 0;
                s[j] = HSUM(sum) + t[j];
            }
            UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
                m[j] = 0;
                if (!rms)
                    m[j] = seg_lane_reduce(s[j], scratch, lid, lane, 0) / (A)cols;
            }
            /* Squared deviations; entries past the row are 0 - m: leave them out. */
            int bad[ITEM_ROWS], any = 0;
            UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
                AV q = (AV)(0);
                UNROLL for (uint k = 0; k < REG_VECS; k++) {
                    const ulong vi = lane + (ulong)k * SEG;
                    if (HAS_VEC(vi)) {
                        const AV d = v[j][k] - m[j];
                        q = fma(d, d, q);
                    }
                }
                A qs = HSUM(q);
                if (has_tail)
                    qs = fma(t[j] - m[j], t[j] - m[j], qs);
                var[j] = seg_lane_reduce(qs, scratch, lid, lane, 0) / (A)cols;
                bad[j] = active[j] && needs_rescale(var[j]);
                any |= bad[j];
            }
#if SEG == 1
            if (attempt == 1 || !any) /* no barrier to keep the items together */
                break;
#else
            /* called on both passes, not behind attempt == 1 ||: PoCL's work-group compiler
             * copies the code between barriers for each path through a branch that holds one
             * (a cold build of this kernel at 32 lanes of 6 vectors of 4: 4.9-5.8 s, now
             * 1.5-1.8 s) */
            const int any_g = group_any(any, any_slots, it, lid);
            if (attempt == 1 || !any_g)
                break;
#endif
            /* The largest magnitude of each row; rows that do not need it keep scale 1 and
             * redo exactly what they did, bit for bit. */
            UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
                A mx = 0;
                UNROLL for (uint k = 0; k < REG_VECS; k++) {
                    const ulong vi = lane + (ulong)k * SEG;
                    if (active[j] && HAS_VEC(vi))
                        mx = fmax(mx, HMAX(IN_ABSMAXV(in[j], vi * VW)));
                }
                if (active[j] && has_tail)
                    mx = fmax(mx, IN_ABSMAX1(in[j], ti));
                mx = seg_lane_reduce(mx, scratch, lid, lane, 1);
                sc[j] = bad[j] ? rescale_factor(mx) : (A)1;
            }
        }
        UNROLL for (uint j = 0; j < ITEM_ROWS; j++) {
            const A r = rsqrt(var[j] + eps * sc[j] * sc[j]);
            if (!active[j]) /* past the last barrier: rows beyond the end skip the writes */
                continue;
            if (lane == 0)
                store_stats(FWD_MEAN, FWD_RSTD, row0 + j, K[j], m[j], r, sc[j], flags);
            row_out out = make_row_out(FWD_OUT_ARGS, row0 + j, flags);
            out.al = al;
            UNROLL for (uint k = 0; k < REG_VECS; k++) {
                const ulong vi = lane + (ulong)k * SEG;
                if (HAS_VEC(vi)) {
#if defined(CLNORM_RESIDUAL)
                    if (out.s)
                        STOREV_R_AL(sv[j][k], out.s + vi * VW, al);
#endif
#if defined(STREAM_STORE) && SEG == 1
                    if (al) /* aligned to the vector: a non-temporal store (common.cl) */
                        storev_stream(out_yv(out, vi * VW, v[j][k], m[j], r), out.y + vi * VW);
                    else
#endif
                    STOREV_AL(out_yv(out, vi * VW, v[j][k], m[j], r), out.y + vi * VW, al);
                }
            }
            if (has_tail) {
                out_sum1(out, in[j], ti);
                STORE1(out_y1(out, ti, t[j], m[j], r), out.y + ti);
            }
        }
    }
}

__kernel void norm_subgroup(FWD_PTRS, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_ROW_SCALARS;
    volatile __local int any_slots[3];
#if SEG > 1
    if (get_local_id(0) < 3)
        any_slots[get_local_id(0)] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    if (flags & CLNORM_KF_ALIGNED) /* the same for every item: both copies have barriers */
        subgroup_rows(FWD_ARGS, rows, cols, eps, flags, scratch, any_slots, 1);
    else
        subgroup_rows(FWD_ARGS, rows, cols, eps, flags, scratch, any_slots, 0);
}
