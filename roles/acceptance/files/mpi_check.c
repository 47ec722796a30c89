/* SPDX-License-Identifier: GPL-3.0-or-later
 * MPI check of the acceptance suite (trainstack.cluster): hello from every rank, two allreduces with results checked
 * exactly, and a ping-pong between rank 0 and the last rank (another node under srun -N2).
 * Exit status 0 only when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTOR 1048576
#define LAT_ITERS 2000
#define BW_BYTES (4 << 20)
#define BW_ITERS 40

static double pingpong(int rank, int peer, char *buf, int bytes, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == peer) {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) / iters / 2.0; /* one-way time */
}

int main(int argc, char **argv) {
    int rank, size, len, ok = 1, all_ok = 0;
    char host[MPI_MAX_PROCESSOR_NAME], peer_host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("hello rank=%d size=%d host=%s\n", rank, size, host);
    fflush(stdout);

    /* Scalar: sum of rank+1 over all ranks is size*(size+1)/2. */
    long mine = rank + 1, sum = 0, expect = (long)size * (size + 1) / 2;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != expect) ok = 0;

    /* Vector (8 MiB, large enough for the rendezvous protocol): halves and small integers add exactly. */
    double *in = malloc(VECTOR * sizeof(double)), *out = malloc(VECTOR * sizeof(double));
    for (int i = 0; i < VECTOR; i++) in[i] = rank * 0.5 + (i % 7);
    MPI_Allreduce(in, out, VECTOR, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double ranks_half = 0.25 * size * (size - 1); /* sum over r of r*0.5 */
    int bad = 0;
    for (int i = 0; i < VECTOR; i++)
        if (out[i] != ranks_half + (double)size * (i % 7)) bad++;
    if (bad) ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    int peer = size - 1;
    if (rank == peer) MPI_Send(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) MPI_Recv(peer_host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char *buf = calloc(BW_BYTES, 1);
    double lat = 0, bw = 0;
    if (size > 1) {
        pingpong(rank, peer, buf, 8, 100); /* warm-up: connections are set up lazily */
        lat = pingpong(rank, peer, buf, 8, LAT_ITERS);
        bw = BW_BYTES / pingpong(rank, peer, buf, BW_BYTES, BW_ITERS) / 1e6;
    }
    if (rank == 0) {
        printf("allreduce sum=%ld expected=%ld vector_mismatches_rank0=%d all_ok=%d\n", sum, expect, bad, all_ok);
        printf("pingpong from=%s to=%s latency_us=%.2f bandwidth_MBps=%.1f\n", host, peer_host, lat * 1e6, bw);
    }
    free(in);
    free(out);
    free(buf);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
