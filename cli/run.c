/*
 * run.c — `tir run`: options, inputs, the run, the results and the timing
 * line.  Results go to stdout, everything else to stderr.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cli_run(int argc, char **argv)
{
	fprintf(stderr, "tir: execution is not built yet\n");
	return 1;
}
