/* cli_demo.h - `clnorm demo` (and `clnorm` with no arguments): a transformer-sized LayerNorm
 * on the default device, checked against the CPU reference and timed. */
#ifndef CLNORM_CLI_DEMO_H
#define CLNORM_CLI_DEMO_H

/* argv holds the arguments after "demo" (argc may be 0). Returns the exit code. */
int cli_demo(int argc, char **argv);

#endif /* CLNORM_CLI_DEMO_H */
