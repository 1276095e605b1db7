/*
 * cli.h — what the CLI's files share: reading programs, printing errors,
 * the clock, and the commands' entry points.
 */
#ifndef TIR_CLI_H
#define TIR_CLI_H

#include "tir.h"

enum { EXIT_OK = 0, EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_REMOTE = 3 };

double cli_now_ms(void);
/* Parse FILE into a new program; NULL (errors printed, *status set) if not. */
struct tir_program *cli_load_program(const char *path, int *status, double *parse_ms);
void cli_print_diags(const struct tir_program *p);
void cli_print_err(const struct tir_err *e);

int cli_run(int argc, char **argv);
extern const char *const cli_run_help;

#endif
