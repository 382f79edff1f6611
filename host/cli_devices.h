/* cli_devices.h - `clnorm devices`: the OpenCL platforms and devices clnorm can use. */
#ifndef CLNORM_CLI_DEVICES_H
#define CLNORM_CLI_DEVICES_H

/* argv holds the arguments after "devices". Returns the exit code. */
int cli_devices(int argc, char **argv);

#endif /* CLNORM_CLI_DEVICES_H */
