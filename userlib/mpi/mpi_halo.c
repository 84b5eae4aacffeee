// SPDX-License-Identifier: MIT
/*
 * mpi_halo: the stencil pattern of the PEACH2 papers on a ring of ranks. A periodic 2-D
 * grid of ROWS x nranks rows and COLS columns is cut into row blocks, one per rank; every
 * step each rank sends its first row to the rank before it and its last row to the rank
 * after it (non-blocking, both at once), receives the two halo rows, and applies a
 * 5-point integer stencil. After STEPS steps rank 0 gathers the grid and compares it,
 * word for word, with the same computation done serially: any lost, stale, misplaced or
 * reordered halo row changes the result.
 *
 * Output (rank 0): the shape, the time per step and a line starting "mpi_halo: OK".
 */
#include "mpi_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t initial(size_t row, size_t col)
{
	return (uint32_t)mpit_pattern_word(row, col);
}

/* One step of the stencil on rows 1..rows of a (rows + 2) x cols block whose rows 0 and
 * rows + 1 hold the halos; columns wrap around. */
static void stencil(const uint32_t *a, uint32_t *b, size_t rows, size_t cols)
{
	size_t r, c;

	for (r = 1; r <= rows; r++)
		for (c = 0; c < cols; c++) {
			const uint32_t *row = a + r * cols;
			size_t left = c ? c - 1 : cols - 1, right = c + 1 < cols ? c + 1 : 0;

			b[r * cols + c] = row[left] + row[right] + 3u * row[c] +
					  row[c - cols] + (row[c + cols] ^ (uint32_t)r);
		}
}

int main(int argc, char **argv)
{
	size_t rows = 64, cols = 1024, r, total;
	int steps = 20, rank, nranks, c, step, prev, next;
	uint32_t *a, *b, *t, *all = NULL;
	double t0, elapsed;

	mpit_init(&argc, &argv, &rank, &nranks);
	while ((c = getopt(argc, argv, "r:c:t:h")) != -1) {
		switch (c) {
		case 'r': rows = mpit_parse_size(optarg, "-r"); break;
		case 'c': cols = mpit_parse_size(optarg, "-c"); break;
		case 't': steps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-r ROWS per rank (64)] [-c COLS (1024)] [-t STEPS (20)]\n",
				argv[0]);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (rows < 1 || cols < 1 || steps < 0 || cols > (1u << 24) || rows > (1u << 20))
		mpit_fail("bad shape: %zu rows x %zu columns, %d steps", rows, cols, steps);
	prev = (rank + nranks - 1) % nranks;
	next = (rank + 1) % nranks;
	a = calloc((rows + 2) * cols, sizeof(*a));
	b = calloc((rows + 2) * cols, sizeof(*b));
	if (!a || !b)
		mpit_fail("cannot allocate 2 x %zu rows of %zu words", rows + 2, cols);
	for (r = 0; r < rows; r++)
		for (size_t col = 0; col < cols; col++)
			a[(r + 1) * cols + col] = initial(rank * rows + r, col);

	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	t0 = MPI_Wtime();
	for (step = 0; step < steps; step++) {
		MPI_Request req[4];
		MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's value */

		/* halo rows: mine first -> prev's bottom halo, mine last -> next's top halo */
		MPIT_CHECK(MPI_Irecv(a, (int)cols, MPI_UINT32_T, prev, 1, MPI_COMM_WORLD, &req[0]));
		MPIT_CHECK(MPI_Irecv(a + (rows + 1) * cols, (int)cols, MPI_UINT32_T, next, 0,
				     MPI_COMM_WORLD, &req[1]));
		MPIT_CHECK(MPI_Isend(a + cols, (int)cols, MPI_UINT32_T, prev, 0, MPI_COMM_WORLD, &req[2]));
		MPIT_CHECK(MPI_Isend(a + rows * cols, (int)cols, MPI_UINT32_T, next, 1, MPI_COMM_WORLD,
				     &req[3]));
		MPIT_CHECK(MPI_Waitall(4, req, st));
		stencil(a, b, rows, cols);
		t = a, a = b, b = t;
	}
	elapsed = MPI_Wtime() - t0;

	total = rows * (size_t)nranks;
	if (rank == 0 && !(all = malloc(total * cols * sizeof(*all))))
		mpit_fail("cannot allocate the %zu x %zu grid", total, cols);
	MPIT_CHECK(MPI_Gather(a + cols, (int)(rows * cols), MPI_UINT32_T, all, (int)(rows * cols),
			      MPI_UINT32_T, 0, MPI_COMM_WORLD));
	if (rank == 0) {
		/* the serial reference: the whole grid with periodic rows */
		uint32_t *sa = calloc((total + 2) * cols, sizeof(*sa));
		uint32_t *sb = calloc((total + 2) * cols, sizeof(*sb));

		if (!sa || !sb)
			mpit_fail("cannot allocate the serial reference");
		for (r = 0; r < total; r++)
			for (size_t col = 0; col < cols; col++)
				sa[(r + 1) * cols + col] = initial(r, col);
		for (step = 0; step < steps; step++) {
			memcpy(sa, sa + total * cols, cols * sizeof(*sa));
			memcpy(sa + (total + 1) * cols, sa + cols, cols * sizeof(*sa));
			/* the same stencil block by block: a row's index within its rank's
			 * block enters the formula (stencil() writes rows 1..rows only) */
			for (int k = 0; k < nranks; k++)
				stencil(sa + k * rows * cols, sb + k * rows * cols, rows, cols);
			t = sa, sa = sb, sb = t;
		}
		for (r = 0; r < total; r++)
			for (size_t col = 0; col < cols; col++)
				if (all[r * cols + col] != sa[(r + 1) * cols + col])
					mpit_fail("after %d steps, row %zu (rank %zu's row %zu) column %zu is "
						  "0x%08x, the serial computation has 0x%08x",
						  steps, r, r / rows, r % rows, col, all[r * cols + col],
						  sa[(r + 1) * cols + col]);
		printf("# mpi_halo: %d ranks on a ring, %zu x %zu grid (%zu rows each), %d steps, "
		       "halo rows of %zu bytes: %.3f ms per step\n",
		       nranks, total, cols, rows, steps, cols * sizeof(uint32_t),
		       steps ? elapsed * 1e3 / steps : 0.0);
		printf("mpi_halo: OK: %d steps on %d ranks match the serial computation\n", steps, nranks);
		free(sa);
		free(sb);
		free(all);
	}
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
