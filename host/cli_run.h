/* cli_run.h - `clnorm run`: layer or RMS normalization of a .npy file. */
#ifndef CLNORM_CLI_RUN_H
#define CLNORM_CLI_RUN_H

/* argv holds the arguments after "run". Returns the exit code. */
int cli_run(int argc, char **argv);

#endif /* CLNORM_CLI_RUN_H */
