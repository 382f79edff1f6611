/* The bench ops: clnorm's op table (clnorm_op_count, clnorm_op_query, clnorm_slot_query) in
 * each direction, forward ops first. Names come from the op's own name ("add_rms_norm" ->
 * "add-rms", its backward "add-rms-backward"); the slots the bench passes, and which are rows
 * or outputs, come from clnorm_slot_query. A new operation in the library shows up here with
 * no code; only a name kept for compatibility needs a line in `renamed`. */
#include "bench.h"

#include <string.h>

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

/* The slots of kind in dir on a probe shape of 2 x 3: a row tensor has 2 rows there, a
 * vector (gamma, beta: 3 columns; mean, rstd: 2) one. 0 when the kind has no such op. */
static int probe(clnorm_kind kind, clnorm_direction dir, bench_op_info *o)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, 2, 3);
    if (dir == CLNORM_BACKWARD)
        d.flags |= CLNORM_WITH_BACKWARD;
    o->given = o->row_slots = o->outputs = 0;
    o->out = CLNORM_ARG_SLOT_COUNT;
    for (int s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        clnorm_slot_info si;
        if (clnorm_slot_query(&d, dir, (clnorm_arg_slot)s, &si) != CLNORM_OK)
            return 0;
        if (si.use == CLNORM_SLOT_UNUSED || (NOT_GIVEN & BENCH_SLOT(s)))
            continue;
        o->given |= BENCH_SLOT(s);
        if (si.rows == 2)
            o->row_slots |= BENCH_SLOT(s);
        if (si.is_output)
            o->outputs |= BENCH_SLOT(s);
        if (si.is_output && si.rows == 2 && o->out == CLNORM_ARG_SLOT_COUNT)
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

static void build(void)
{
    if (built)
        return;
    built = 1;
    const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};
    for (int di = 0; di < 2; di++)
        for (size_t k = 0; k < clnorm_op_count() && n_table < BENCH_MAX_OPS; k++) {
            clnorm_op_info info;
            if (clnorm_op_query((clnorm_kind)k, &info) != CLNORM_OK)
                continue;
            if (dirs[di] == CLNORM_BACKWARD && info.backward_slots == 0)
                continue;
            bench_op_info *o = &table[n_table];
            memset(o, 0, sizeof *o);
            o->kind = (clnorm_kind)k;
            o->dir = dirs[di];
            o->has_mean = info.has_mean;
            if (!probe(o->kind, o->dir, o))
                continue;
            char base[24];
            short_name(info.name, base, sizeof base);
            snprintf(o->name, sizeof o->name, "%s%s", base,
                     o->dir == CLNORM_BACKWARD ? "-backward" : "");
            for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
                if (strcmp(o->name, renamed[i].derived) == 0) {
                    snprintf(o->alias, sizeof o->alias, "%s", o->name);
                    snprintf(o->name, sizeof o->name, "%s", renamed[i].name);
                }
            find_unfused(o, &info);
            n_table++;
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

int bench_op_find(clnorm_kind kind, clnorm_direction dir, bench_op *op)
{
    build();
    for (size_t i = 0; i < n_table; i++)
        if (table[i].kind == kind && table[i].dir == dir) {
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
