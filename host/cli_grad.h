/* cli_grad.h - `clnorm grad`: the backward pass of layer or RMS normalization of .npy files. */
#ifndef CLNORM_CLI_GRAD_H
#define CLNORM_CLI_GRAD_H

/* argv holds the arguments after "grad". Returns the exit code. */
int cli_grad(int argc, char **argv);

#endif /* CLNORM_CLI_GRAD_H */
