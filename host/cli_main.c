/*
 * cli_main.c - the `clnorm` command: dispatches to devices / run / grad / demo / bench, prints
 * the usage and the version. With no arguments it runs the demo.
 */
#include "cli_args.h"
#include "cli_bench.h"
#include "cli_demo.h"
#include "cli_devices.h"
#include "cli_grad.h"
#include "cli_run.h"

#include <clnorm.h>

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fputs("usage: clnorm [COMMAND] [OPTIONS]\n"
          "\n"
          "Layer normalization on any OpenCL device.\n"
          "\n"
          "commands:\n"
          "  devices   list the OpenCL platforms and devices, marking the default\n"
          "  run       normalize a .npy file: clnorm run --input X.npy --output Y.npy [...];\n"
          "            --residual R.npy normalizes X + R [--sum-output S.npy saves it];\n"
          "            --groups G [--layout nchw|nhwc] [--silu] is GroupNorm (+ SiLU);\n"
          "            --scale SCALE.npy / --shift SHIFT.npy modulate each sample (adaLN);\n"
          "            --mean-input MEAN.npy --rstd-input RSTD.npy: precomputed statistics\n"
          "  grad      the backward pass: clnorm grad --input X.npy --grad-output DY.npy\n"
          "            --grad-input DX.npy [--grad-gamma DG.npy] [--grad-beta DB.npy] [...];\n"
          "            with --residual R.npy [--grad-sum-output DS.npy], DX is also dR;\n"
          "            --grad-scale / --grad-shift with --scale / --shift\n"
          "  demo      LayerNorm of a random 8192 x 768 batch, checked and timed (the default)\n"
          "  bench     run the clnorm-bench benchmark with the remaining arguments\n"
          "            ('clnorm bench --help' lists them)\n"
          "\n"
          "  -h, --help     this help ('clnorm COMMAND --help' for a command's options)\n"
          "  --version      the version\n"
          "\n"
          "The device: --device SPEC, else the CLNORM_DEVICE environment variable (cpu, gpu,\n"
          "accelerator, P:D as 'clnorm devices' lists, or a name substring), else the first GPU.\n"
          "run and grad compute in --dtype f32, f16, bf16 or f64 (default: the input's type);\n"
          "a float32 --residual with f16 or bf16 keeps the residual and the sum in float32.\n",
          out);
}

int main(int argc, char **argv)
{
    const char *cmd;
    if (argc < 2)
        return cli_demo(0, NULL);
    cmd = argv[1];
    if (cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("clnorm %d.%d.%d\n", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
               CLNORM_VERSION_PATCH);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "devices") == 0)
        return cli_devices(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cli_run(argc - 2, argv + 2);
    if (strcmp(cmd, "grad") == 0)
        return cli_grad(argc - 2, argv + 2);
    if (strcmp(cmd, "demo") == 0)
        return cli_demo(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0)
        return cli_bench(argc - 2, argv + 2, argv[0]);
    if (cmd[0] == '-')
        cli_error("unknown option '%s' (see 'clnorm --help')", cmd);
    else
        cli_error("unknown command '%s' (see 'clnorm --help')", cmd);
    return CLI_EXIT_USAGE;
}
