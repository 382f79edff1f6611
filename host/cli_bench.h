/* cli_bench.h - `clnorm bench`: runs the clnorm-bench program with the remaining arguments. */
#ifndef CLNORM_CLI_BENCH_H
#define CLNORM_CLI_BENCH_H

/* argv holds the arguments after "bench"; argv0 is the tool's own argv[0] (a fallback for
 * finding its directory). Replaces the process with clnorm-bench; returns (the exit code)
 * only when it cannot, the error printed. */
int cli_bench(int argc, char **argv, const char *argv0);

#endif /* CLNORM_CLI_BENCH_H */
