/* rounds.c - one case's contenders: each is created and checked on set 0, then all of them
 * are timed together in interleaved rounds.
 *
 * Why rounds: on a shared machine the memory bandwidth and the CPU time a process gets move
 * by up to 2x over seconds (bench/RESULTS.md). Timed one after the other, each contender
 * meets its own stretch of that noise, and a ratio of two medians compares two stretches.
 * In rounds (--rounds R), every contender's timed runs are split into R slices, and round k
 * runs slice k of each contender in turn, device side and host side alike: the medians then
 * come from the same stretches, and a ratio compares like with like. --rounds 1 is the
 * sequential order: all of a contender's runs, then the next contender's.
 *
 * At each switch the machine settles first: a pause (another contender's threads may still
 * be spinning: OpenMP's, the host loop's pool, PoCL's), then one untimed run of the new
 * contender, so its first timed run does not pay for its predecessor. The single-threaded CPU
 * reference (is_slow), timed on a budget rather than a count, runs alone right after its
 * check, as before.
 *
 * The buffer rotation keeps one cursor per side across contenders and rounds, so no run starts
 * on the set the run before it just left in the cache. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The pause at a switch: longer than libgomp's default spin-wait (GOMP_SPINCOUNT 300000
 * iterations, a few ms) and the host loop pool's 100 us. */
#define SETTLE_NS 5000000L

/* The most reps --min-ms gives a contender: 100000 calls of a microsecond are 0.1 s. */
#define MIN_MS_MAX_REPS 100000

static void note_append(char *note, size_t size, const char *text)
{
    size_t len = strlen(note);
    if (len + 1 < size)
        snprintf(note + len, size - len, "%s%s", len ? "; " : "", text);
}

/* "y 2.1e-04, sum 0" when the op writes more than one output: which one is off. */
static void note_errors(char *note, size_t size, const bench_verdict *v)
{
    char buf[160] = "";
    size_t used = 0;
    int n = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        if (v->err_of[s] < 0.0)
            continue;
        char e[24] = "0";
        if (v->err_of[s] > 0.0)
            snprintf(e, sizeof e, "%.1e", v->err_of[s]);
        int w = snprintf(buf + used, sizeof buf - used, "%s%s %s", n ? ", " : "",
                         clnorm_arg_name((clnorm_arg_slot)s), e);
        if (w < 0 || (size_t)w >= sizeof buf - used)
            break;
        used += (size_t)w;
        n++;
    }
    if (n > 1)
        note_append(note, size, buf);
}

static void settle(void)
{
    struct timespec ts = {0, SETTLE_NS};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static bench_entry *new_entry(bench_case_run *cr, const bench_contender *c,
                              const bench_env *env)
{
    if (cr->n == cr->cap) {
        size_t cap = cr->cap ? 2 * cr->cap : 16;
        bench_entry *e = realloc(cr->e, cap * sizeof *e);
        if (!e)
            return NULL;
        cr->e = e;
        cr->cap = cap;
    }
    bench_entry *e = &cr->e[cr->n++];
    memset(e, 0, sizeof *e);
    const bench_problem *p = env->p;
    e->c = c;
    e->r.op = p->op;
    e->r.dtype = p->dtype;
    e->r.rows = p->rows;
    e->r.cols = p->cols;
    e->r.shape = p->shape;
    e->r.layout = p->layout;
    e->r.impl = c->name;
    e->r.side = c->side;
    e->r.role = c->role;
    e->r.max_err = -1.0;
    e->r.frac_of_copy = e->r.vs_onednn = -1.0;
    return e;
}

/* A FAILED row with msg (a cell: cut), the contender destroyed if it was created. */
static void fail(bench_case_run *cr, bench_entry *e, const char *msg)
{
    if (e->state)
        e->c->destroy(e->state);
    e->state = NULL;
    free(e->t);
    e->t = NULL;
    e->r.status = BENCH_R_FAILED;
    snprintf(e->r.note, sizeof e->r.note, "%.*s", (int)sizeof e->r.note - 1, msg);
    cr->failures++;
}

/* Runs n of the entry on its side's rotation; timed ones go to e->t. */
static int runs(bench_entry *e, int n, int timed, char *msg, size_t msg_size)
{
    for (int i = 0; i < n; i++) {
        const size_t set = (*e->cursor)++ % e->n_sets;
        const double t0 = bench_now_s();
        if (e->c->run(e->state, set, msg, msg_size) != BENCH_OK)
            return BENCH_FAIL;
        if (timed)
            e->t[e->done++] = bench_now_s() - t0;
    }
    return BENCH_OK;
}

/* The row of a timed entry, from its runs; the contender destroyed. */
static void finish(bench_case_run *cr, bench_entry *e)
{
    const bench_problem *p = cr->env->p;
    const int is_copy = (e->c->role & BENCH_ROLE_COPY) != 0;
    const double median = bench_median(e->t, (size_t)e->done);
    e->c->destroy(e->state);
    e->state = NULL;
    free(e->t);
    e->t = NULL;
    e->r.status = e->verdict;
    e->r.reps = e->done;
    e->r.median_us = median * 1e6;
    e->r.gbps = (is_copy ? p->copy_bytes : p->bytes) / 1e9 / median;
    if (e->reps != cr->opt->reps) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d reps", e->reps);
        note_append(e->r.note, sizeof e->r.note, buf);
    }
}

void bench_case_begin(bench_case_run *cr, const bench_options *opt, const bench_env *env)
{
    memset(cr, 0, sizeof *cr);
    cr->opt = opt;
    cr->env = env;
    cr->cursor[0] = cr->cursor[1] = 1; /* set 0 holds the outputs just checked */
}

void bench_case_add(bench_case_run *cr, const bench_contender *c, size_t n_sets,
                    const char *sets_error)
{
    const bench_options *opt = cr->opt;
    const bench_env *env = cr->env;
    const bench_problem *p = env->p;
    char msg[BENCH_MSG] = "";
    bench_entry *e = new_entry(cr, c, env);
    if (!e) {
        fprintf(stderr, "clnorm-bench: out of host memory for the contenders\n");
        cr->failures++;
        return;
    }
    e->cursor = &cr->cursor[c->side == BENCH_HOST];
    e->n_sets = n_sets;
    if (sets_error) {
        fail(cr, e, sets_error);
        return;
    }

    int rc = c->create(env, &e->state, e->r.note, sizeof e->r.note, msg, sizeof msg);
    if (rc != BENCH_OK) {
        e->state = NULL; /* a failed create owns nothing */
        if (rc != BENCH_SKIP) {
            fail(cr, e, msg);
            return;
        }
        e->r.status = BENCH_R_SKIPPED;
        snprintf(e->r.note, sizeof e->r.note, "%.*s", (int)sizeof e->r.note - 1, msg);
        return;
    }

    /* The check: one run on set 0 over poisoned outputs, compared with the reference (x for a
     * copy). */
    rc = bench_poison(env, c->side, msg, sizeof msg);
    if (rc != BENCH_OK) {
        fail(cr, e, msg);
        return;
    }
    const double t0 = bench_now_s();
    rc = c->run(e->state, 0, msg, sizeof msg);
    const double t_check = bench_now_s() - t0;
    const int is_copy = (c->role & BENCH_ROLE_COPY) != 0;
    bench_verdict v;
    if (rc == BENCH_OK)
        rc = bench_check(env, c->side, is_copy, &v, msg, sizeof msg);
    if (rc != BENCH_OK) {
        fail(cr, e, msg);
        return;
    }
    e->r.max_err = v.err;
    if (v.wrong && c->inexact) {
        char buf[96];
        snprintf(buf, sizeof buf, "inexact baseline (%s)", c->inexact);
        note_append(e->r.note, sizeof e->r.note, buf);
    }
    if (v.wrong && !is_copy)
        note_errors(e->r.note, sizeof e->r.note, &v);
    /* Counted here, so a result that is WRONG fails the run even when it is not timed. */
    e->verdict = !v.wrong ? BENCH_R_OK : c->inexact ? BENCH_R_INEXACT : BENCH_R_WRONG;
    if (e->verdict == BENCH_R_WRONG && (c->role & BENCH_ROLE_CLNORM))
        cr->wrong++;

    e->reps = opt->reps;
    e->warmup = opt->warmup;
    if (c->is_slow) {
        /* Single-threaded: a time budget instead of the full count on big shapes. */
        if (opt->quick && p->n_elems > ((size_t)1 << 20)) {
            e->r.status = BENCH_R_SKIPPED;
            if (e->verdict == BENCH_R_WRONG)
                note_append(e->r.note, sizeof e->r.note, "WRONG");
            note_append(e->r.note, sizeof e->r.note, "not timed in --quick on a big shape");
            c->destroy(e->state);
            e->state = NULL;
            return;
        }
        const int least = e->reps < 3 ? e->reps : 3;
        const double fit = t_check > 0.0 ? opt->ref_seconds / t_check : (double)e->reps;
        if (fit < e->reps)
            e->reps = fit < least ? least : (int)fit;
        if (e->warmup > 1 && t_check * e->reps > 0.5)
            e->warmup = 1;
    } else if (opt->min_ms > 0 && t_check > 0.0) {
        /* A short call gets reps enough for --min-ms in all. The check run is a first call,
         * if anything slower than the timed ones, so the estimate errs towards fewer. */
        const double fit = opt->min_ms * 1e-3 / t_check;
        const int want = fit < MIN_MS_MAX_REPS ? (int)fit : MIN_MS_MAX_REPS;
        if (want > e->reps) /* never fewer than --reps */
            e->reps = want;
    }
    e->t = malloc((size_t)e->reps * sizeof *e->t);
    if (!e->t) {
        fail(cr, e, "out of host memory");
        return;
    }
    if (c->is_slow) { /* alone, now: not part of the rounds */
        if (runs(e, e->warmup, 0, msg, sizeof msg) != BENCH_OK ||
            runs(e, e->reps, 1, msg, sizeof msg) != BENCH_OK) {
            fail(cr, e, msg);
            return;
        }
        finish(cr, e);
        return;
    }
    e->live = 1;
}

void bench_case_time(bench_case_run *cr)
{
    const int rounds = cr->opt->rounds;
    char msg[BENCH_MSG];
    for (int k = 0; k < rounds; k++)
        for (size_t i = 0; i < cr->n; i++) {
            bench_entry *e = &cr->e[i];
            if (!e->live)
                continue;
            /* slice k of the reps: they add up to e->reps, at least one per round when
             * reps >= rounds */
            const int from = (int)((long long)e->reps * k / rounds),
                      to = (int)((long long)e->reps * (k + 1) / rounds);
            if (to == from)
                continue;
            int untimed = k == 0 ? e->warmup : 0;
            if (rounds > 1) {
                settle();
                if (untimed < 1)
                    untimed = 1;
            }
            if (runs(e, untimed, 0, msg, sizeof msg) != BENCH_OK ||
                runs(e, to - from, 1, msg, sizeof msg) != BENCH_OK) {
                e->live = 0;
                fail(cr, e, msg);
            }
        }
    for (size_t i = 0; i < cr->n; i++)
        if (cr->e[i].live) {
            cr->e[i].live = 0;
            finish(cr, &cr->e[i]);
        }
}

void bench_case_end(bench_case_run *cr)
{
    for (size_t i = 0; i < cr->n; i++) {
        bench_entry *e = &cr->e[i];
        if (e->state)
            e->c->destroy(e->state);
        free(e->t);
    }
    free(cr->e);
    memset(cr, 0, sizeof *cr);
}
