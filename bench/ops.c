/* The bench ops: clnorm's op table (clnorm_op_count, clnorm_op_query, clnorm_slot_query) in
 * each direction, forward ops first. Names come from the op's own name ("add_rms_norm" ->
 * "add-rms", its backward "add-rms-backward"); the slots the bench passes, and which are rows
 * or outputs, come from clnorm_slot_query; the form of the data (rows x cols, or channels x
 * spatial positions in groups) from whether clnorm_desc_check takes groups for the kind.
 * An operation whose forward takes CLNORM_ARG_SCALE (per-sample modulation, DiT's adaLN) is
 * also benchmarked modulated, scale and shift both given: "layer-mod", "layer-mod-backward",
 * in the samples form (B samples of T rows). GroupNorm's modulated form is the diffusion
 * UNet's scale-shift norm (ADM's ResBlock with use_scale_shift_norm, EDM's UNetBlock), y =
 * silu(gn(x) * (1 + scale[n]) + shift[n]) with B = N: "group-mod", "group-mod-backward", the
 * SiLU included, on GroupNorm's shapes. An operation whose descriptor takes CLNORM_SILU
 * (GroupNorm's fused SiLU, as diffusion UNets' resnet blocks use it) is also benchmarked with
 * it: "group-silu", "group-silu-backward", on the plain op's shapes. Every operation that
 * takes CLNORM_USE_GLOBAL_STATS is also benchmarked with precomputed statistics, those of the
 * data (data.c): "layer-stats", "group-stats-backward", ..., on the plain op's shapes; the
 * forward is then an elementwise apply. Each form has its table
 * of shapes (the standard ones and the --quick ones) and an op takes its form's. A new
 * operation in the library shows up here with no code; only a name kept for compatibility
 * needs a line in `renamed`. */
#include "bench.h"

#include <string.h>

/* The rows form: the shapes of ARCHITECTURE.md "Benchmark rules": transformers, latency,
 * tall-thin, wide, odd; --quick: a latency shape and two odd ones, all small. */
#define RC(r, c) {.rows = r, .cols = c}
static const bench_shape rows_shapes[] = {
    RC(8192, 768), RC(8192, 1024), RC(4096, 4096),  RC(2048, 12288), RC(1, 768),
    RC(32, 4096),  RC(262144, 64), RC(16, 1048576), RC(1000, 1000),  RC(257, 768),
};
static const bench_shape rows_quick[] = {RC(1, 768), RC(257, 768), RC(1000, 1000)};
#undef RC

/* The groups form (GroupNorm, issue #10): a diffusion UNet's GroupNorms (batch 1 and 8, the
 * channel counts 320, 640 and 1280 of its stages, at 64x64, 32x32 and 16x16 latents, 32
 * groups) and a ResNet-50 stage (batch 32, 256 channels, 56x56, 32 groups). Every shape runs
 * in both layouts unless --layout says otherwise. --quick: one small UNet-like shape. */
#define NCHW(n, c, h, w) {.rows = n, .cols = c, .spatial = {h, w}, .n_spatial = 2, .groups = 32}
#define UNET(n, c, hw) NCHW(n, c, hw, hw)
static const bench_shape groups_shapes[] = {
    UNET(1, 320, 64),  UNET(1, 320, 32),  UNET(1, 320, 16),  UNET(1, 640, 64),
    UNET(1, 640, 32),  UNET(1, 640, 16),  UNET(1, 1280, 64), UNET(1, 1280, 32),
    UNET(1, 1280, 16), UNET(8, 320, 64),  UNET(8, 320, 32),  UNET(8, 320, 16),
    UNET(8, 640, 64),  UNET(8, 640, 32),  UNET(8, 640, 16),  UNET(8, 1280, 64),
    UNET(8, 1280, 32), UNET(8, 1280, 16), NCHW(32, 256, 56, 56),
};
static const bench_shape groups_quick[] = {UNET(2, 320, 16)};
#undef UNET
#undef NCHW

/* The samples form (modulation, issue #11): diffusion transformers' (B, T, C), DiT-XL/2
 * (1152 channels) at 512x512 (a 64x64 latent in 2x2 patches: 1024 tokens) in batches of 8
 * and at 256x256 (256 tokens) in batches of 64, and a 768-wide DiT-B/2 at 4096 tokens in
 * batches of 16. --quick: a small DiT-like shape and an odd one whose rows end in a partial
 * vector of 4. */
#define BTC(b, t, c) {.rows = (size_t)(b) * (t), .cols = c, .samples = b}
static const bench_shape samples_shapes[] = {BTC(8, 1024, 1152), BTC(64, 256, 1152),
                                             BTC(16, 4096, 768)};
static const bench_shape samples_quick[] = {BTC(2, 128, 1152), BTC(3, 7, 101)};
#undef BTC

/* What a modulated op's cases carry: both per-sample tensors, as DiT's adaLN has them. */
#define MOD_FLAGS (CLNORM_SCALE | CLNORM_SHIFT)

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Targets stated against the CPU reference (issue #10: GroupNorm's backward >= 1.2x the
 * reference's bandwidth times the core count), against the copy alone (issue #10: GroupNorm's
 * forward >= 90% of the copy and >= 1.0x oneDNN's layer normalization over the groups in
 * NCHW, >= 80% of the copy in NHWC; stated for the op without the SiLU, whose oneDNN peer
 * does less), and against the unfused pair and the copy (issue #8: the fused residual add +
 * norm >= 1.3x the best add-then-norm pair and >= 90% of the copy's bandwidth on its own
 * bytes; issue #11: the modulated forward >= 1.5x the norm then a modulation kernel, and >=
 * 90% of the copy's). `residual`: the target is the fused add's (1) or holds only without a
 * residual (0); `plain`: only without a fused activation or a modulation. */
static const struct {
    unsigned form;
    clnorm_direction dir;
    int residual, plain;
    double ref_cores, fused, copy, copy_nhwc, onednn;
} targets[] = {{BENCH_FORM_GROUPS, CLNORM_BACKWARD, 0, 0, 1.2, 0.0, 0.0, 0.0, 0.0},
               {BENCH_FORM_GROUPS, CLNORM_FORWARD, 0, 1, 0.0, 0.0, 0.9, 0.8, 1.0},
               {BENCH_FORM_ROWS, CLNORM_FORWARD, 1, 0, 0.0, 1.3, 0.9, 0.0, 0.0},
               {BENCH_FORM_SAMPLES, CLNORM_FORWARD, 0, 0, 0.0, 1.5, 0.9, 0.0, 0.0}};

/* The form of a kind's data: the groups form when its descriptor takes groups and spatial
 * positions (the row kinds refuse them). */
static unsigned form_of(clnorm_kind kind)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, 2, 4);
    d.groups = 2;
    d.spatial = 3;
    return clnorm_desc_check(&d, NULL, 0) == CLNORM_OK ? BENCH_FORM_GROUPS : BENCH_FORM_ROWS;
}

static void set_shapes(bench_op_info *o)
{
    /* a modulated row op: B samples of T rows; a modulated GroupNorm keeps its shapes */
    o->form = form_of(o->kind);
    if (o->mod_flags && o->form == BENCH_FORM_ROWS)
        o->form = BENCH_FORM_SAMPLES;
    if (o->form == BENCH_FORM_SAMPLES) {
        o->shapes = samples_shapes;
        o->n_shapes = N_OF(samples_shapes);
        o->quick_shapes = samples_quick;
        o->n_quick_shapes = N_OF(samples_quick);
    } else if (o->form == BENCH_FORM_GROUPS) {
        o->shapes = groups_shapes;
        o->n_shapes = N_OF(groups_shapes);
        o->quick_shapes = groups_quick;
        o->n_quick_shapes = N_OF(groups_quick);
    } else {
        o->shapes = rows_shapes;
        o->n_shapes = N_OF(rows_shapes);
        o->quick_shapes = rows_quick;
        o->n_quick_shapes = N_OF(rows_quick);
    }
    o->ref_cores_target = o->fused_target = o->copy_target = 0.0;
    o->copy_target_nhwc = o->onednn_target = 0.0;
    /* The modulation's targets are stated for layer (and hold the same for rms): a residual
     * op moves 4 passes over the rows fused against its pair's 6, so 1.5x is its ceiling;
     * the fused add's hold for add-layer and add-rms. */
    const int residual = (o->given & BENCH_SLOT(CLNORM_ARG_RESIDUAL)) != 0;
    for (size_t i = 0; i < N_OF(targets); i++)
        if (targets[i].form == o->form && targets[i].dir == o->dir &&
            (targets[i].residual == residual || targets[i].fused == 0.0) &&
            !(targets[i].plain && (o->act_flags || o->mod_flags)) &&
            !(o->stats_flags && targets[i].fused > 0.0)) { /* a -stats op has no pair */
            o->ref_cores_target = targets[i].ref_cores;
            o->fused_target = targets[i].fused;
            o->copy_target = targets[i].copy;
            o->copy_target_nhwc = targets[i].copy_nhwc;
            o->onednn_target = targets[i].onednn;
        }
}

const char *bench_layout_name(clnorm_layout layout)
{
    return layout == CLNORM_NHWC ? "nhwc" : "nchw";
}

void bench_shape_label(const bench_shape *s, unsigned form, clnorm_layout layout, char *buf,
                       size_t size)
{
    if (form == BENCH_FORM_SAMPLES && s->samples > 0) {
        snprintf(buf, size, "%zux%zux%zu", s->samples, s->rows / s->samples, s->cols);
        return;
    }
    int used = snprintf(buf, size, "%zux%zu", s->rows, s->cols);
    if (form != BENCH_FORM_GROUPS)
        return;
    for (int i = 0; i < s->n_spatial && used > 0 && (size_t)used < size; i++)
        used += snprintf(buf + used, size - (size_t)used, "x%zu", s->spatial[i]);
    if (used > 0 && (size_t)used < size)
        snprintf(buf + used, size - (size_t)used, ":%zu %s", s->groups,
                 bench_layout_name(layout));
}

/* Names older CSV files and scripts use: the derived name stays accepted as an alias. */
static const struct {
    const char *derived, *name;
} renamed[] = {{"layer-backward", "backward"}};

/* Slots the bench has no data for: DSUM, the sum's gradient from its uses downstream (an
 * optional extra input of the ADD kinds' backward). */
#define NOT_GIVEN BENCH_SLOT(CLNORM_ARG_DSUM)

static bench_op_info table[BENCH_MAX_OPS];
static size_t n_table;
static int built;

/* "add_rms_norm" -> "add-rms": the trailing "_norm" dropped, '_' read as '-'. */
static void short_name(const char *op_name, char *out, size_t size)
{
    snprintf(out, size, "%s", op_name);
    const size_t len = strlen(out), suffix = strlen("_norm");
    if (len > suffix && strcmp(out + len - suffix, "_norm") == 0)
        out[len - suffix] = '\0';
    for (char *c = out; *c; c++)
        if (*c == '_')
            *c = '-';
}

/* The slots of o's kind in its direction, with its modulation, on a probe shape of 4 x 3 in
 * 2 samples: a row tensor has 4 rows there, a vector (gamma, beta: 3 columns; mean, rstd: 4)
 * one and a per-sample tensor (scale, shift, dscale, dshift) 2; the bench keeps both kinds
 * of small tensor in one buffer shared by every set. 0 when the kind has no such op (or the
 * library refuses the modulation). */
static int probe(bench_op_info *o)
{
    enum { PROBE_ROWS = 4 };
    clnorm_desc d;
    clnorm_desc_init(&d, o->kind, PROBE_ROWS, 3);
    d.flags |= o->act_flags | o->stats_flags; /* a kind without the activation refuses it: no such op */
    if (o->dir == CLNORM_BACKWARD)
        d.flags |= CLNORM_WITH_BACKWARD;
    if (o->mod_flags) {
        d.flags |= o->mod_flags;
        d.samples = 2;
    }
    o->given = o->row_slots = o->outputs = 0;
    o->out = CLNORM_ARG_SLOT_COUNT;
    for (int s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        clnorm_slot_info si;
        if (clnorm_slot_query(&d, o->dir, (clnorm_arg_slot)s, &si) != CLNORM_OK)
            return 0;
        if (si.use == CLNORM_SLOT_UNUSED || (NOT_GIVEN & BENCH_SLOT(s)))
            continue;
        o->given |= BENCH_SLOT(s);
        if (si.rows == PROBE_ROWS)
            o->row_slots |= BENCH_SLOT(s);
        if (si.is_output)
            o->outputs |= BENCH_SLOT(s);
        if (si.is_output && si.rows == PROBE_ROWS && o->out == CLNORM_ARG_SLOT_COUNT)
            o->out = (clnorm_arg_slot)s;
    }
    /* An op the bench can run reads x and writes a row. */
    return (o->given & BENCH_SLOT(CLNORM_ARG_X)) && o->out != CLNORM_ARG_SLOT_COUNT;
}

/* For a forward with a residual: the op whose forward takes the same slots without the
 * residual's and has the same statistics (ADD_LAYER -> LAYER). */
static void find_unfused(bench_op_info *o, const clnorm_op_info *info)
{
    const unsigned residual = BENCH_SLOT(CLNORM_ARG_RESIDUAL) | BENCH_SLOT(CLNORM_ARG_SUM);
    o->has_unfused = 0;
    if (o->dir != CLNORM_FORWARD || !(info->forward_slots & BENCH_SLOT(CLNORM_ARG_RESIDUAL)))
        return;
    for (size_t k = 0; k < clnorm_op_count(); k++) {
        clnorm_op_info other;
        if (clnorm_op_query((clnorm_kind)k, &other) != CLNORM_OK)
            continue;
        if (other.forward_slots == (info->forward_slots & ~residual) &&
            other.has_mean == info->has_mean) {
            o->has_unfused = 1;
            o->unfused_kind = (clnorm_kind)k;
            return;
        }
    }
}

/* Appends kind in dir, plain (mod_flags, act_flags and stats_flags 0), modulated, with the
 * fused activation or with precomputed statistics, when the library runs it. */
static void add_op(clnorm_kind kind, const clnorm_op_info *info, clnorm_direction dir,
                   unsigned mod_flags, unsigned act_flags, unsigned stats_flags)
{
    if (n_table == BENCH_MAX_OPS)
        return;
    bench_op_info *o = &table[n_table];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->dir = dir;
    o->mod_flags = mod_flags;
    o->act_flags = act_flags;
    o->stats_flags = stats_flags;
    o->has_mean = info->has_mean;
    if (!probe(o))
        return;
    char base[24];
    short_name(info->name, base, sizeof base);
    /* "group-mod": GroupNorm's modulation comes with its SiLU, no "-silu" in the name */
    snprintf(o->name, sizeof o->name, "%s%s%s%s%s", base, mod_flags ? "-mod" : "",
             act_flags && !mod_flags ? "-silu" : "", stats_flags ? "-stats" : "",
             dir == CLNORM_BACKWARD ? "-backward" : "");
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (strcmp(o->name, renamed[i].derived) == 0) {
            /* memcpy: GCC reads a snprintf between two fields of table[] as an overlap */
            _Static_assert(sizeof o->alias == sizeof o->name, "alias holds any name");
            memcpy(o->alias, o->name, sizeof o->alias);
            snprintf(o->name, sizeof o->name, "%s", renamed[i].name);
        }
    /* the unfused pairs of a plain residual op (a modulated one has its own) */
    if (!mod_flags && !act_flags && !stats_flags)
        find_unfused(o, info);
    set_shapes(o);
    n_table++;
}

/* Per direction: the plain ops, then the modulated ones, then those with the fused SiLU
 * (where the descriptor takes it: probe), then those with precomputed statistics, in the
 * library's order. A modulated op of the groups form (GroupNorm) has the SiLU too: the UNet
 * ResBlock's silu(gn(x) * (1 + scale) + shift); the row kinds' have none (DiT's adaLN). The
 * statistics variant: GroupNorm's for eval-mode InstanceNorm and an image decoded in tiles,
 * the row kinds' for statistics gathered elsewhere (oneDNN's use_global_stats, a
 * sequence-parallel LayerNorm whose rows' moments were reduced across devices). */
_Static_assert(BENCH_MAX_OPS <= 64, "--op keeps its set in an unsigned long long");

static void build(void)
{
    if (built)
        return;
    built = 1;
    const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};
    for (int di = 0; di < 2; di++)
        for (int variant = 0; variant < 4; variant++)
            for (size_t k = 0; k < clnorm_op_count(); k++) {
                clnorm_op_info info;
                if (clnorm_op_query((clnorm_kind)k, &info) != CLNORM_OK)
                    continue;
                if (dirs[di] == CLNORM_BACKWARD && info.backward_slots == 0)
                    continue;
                if (variant == 1 && !(info.forward_slots & BENCH_SLOT(CLNORM_ARG_SCALE)))
                    continue;
                const int grouped = form_of((clnorm_kind)k) == BENCH_FORM_GROUPS;
                add_op((clnorm_kind)k, &info, dirs[di], variant == 1 ? MOD_FLAGS : 0u,
                       variant == 2 || (variant == 1 && grouped) ? CLNORM_SILU : 0u,
                       variant == 3 ? CLNORM_USE_GLOBAL_STATS : 0u);
            }
}

size_t bench_op_count(void)
{
    build();
    return n_table;
}

const bench_op_info *bench_op_get(bench_op op)
{
    build();
    return op < n_table ? &table[op] : NULL;
}

const char *bench_op_name(bench_op op)
{
    const bench_op_info *o = bench_op_get(op);
    return o ? o->name : "?";
}

int bench_op_parse(const char *name, bench_op *op)
{
    build();
    for (size_t i = 0; i < n_table; i++)
        if (strcmp(name, table[i].name) == 0 || (table[i].alias[0] &&
                                                 strcmp(name, table[i].alias) == 0)) {
            *op = (bench_op)i;
            return 0;
        }
    return -1;
}

int bench_op_find(clnorm_kind kind, clnorm_direction dir, unsigned mod_flags, bench_op *op)
{
    build();
    for (size_t i = 0; i < n_table; i++)
        if (table[i].kind == kind && table[i].dir == dir && table[i].mod_flags == mod_flags &&
            table[i].act_flags == 0 && table[i].stats_flags == 0) {
            *op = (bench_op)i;
            return 0;
        }
    return -1;
}

int bench_op_is_backward(bench_op op)
{
    const bench_op_info *o = bench_op_get(op);
    return o && o->dir == CLNORM_BACKWARD;
}

void bench_op_names(char *buf, size_t size)
{
    build();
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < n_table; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", table[i].name);
        if (w < 0 || (size_t)w >= size - used)
            return;
        used += (size_t)w;
    }
}
