/*
 * bench/mpi/allreduce.c — the peer of tir's all_reduce over a group
 * (bench/allreduce.py): a plain C MPI_Allreduce (MPI_SUM) of N f32 on
 * every rank of the job, the buffers made and touched once, then timed
 * runs, each from a barrier to the last rank's end.  Run as
 *   mpirun -n 4 allreduce [--elems N] [--runs R]
 * Rank 0 prints "plain_ms MEDIAN" and "plain_all a,b,c...".  Not a test.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	long n = 16L << 20;
	int runs = 5, warm = 2;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--elems"))
			n = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
	}
	float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
	double *t = calloc((size_t)runs, sizeof *t);
	if (!a || !b || !t || runs < 1 || n < 1 || n > 1L << 30) {
		fprintf(stderr, "allreduce: bad arguments or out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (long i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.001f + (float)rank;
		b[i] = 0;
	}
	for (int k = 0; k < warm + runs; k++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double mine = MPI_Wtime() - t0, most = 0;
		MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (k >= warm)
			t[k - warm] = most * 1e3;
	}
	if (rank == 0) {
		printf("plain_all");
		for (int k = 0; k < runs; k++)
			printf("%s%.2f", k ? "," : " ", t[k]);
		qsort(t, (size_t)runs, sizeof *t, cmp);
		printf("\nplain_ms %.2f\n", runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2);
	}
	free(a);
	free(b);
	free(t);
	MPI_Finalize();
	return 0;
}
