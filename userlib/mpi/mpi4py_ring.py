#!/usr/bin/python3
"""mpi4py_ring: Debian's mpi4py (built for Open MPI) on the cluster, checked.

A token goes once around the ring of ranks (pickled objects, MPI_Sendrecv), every rank
sends a 1 MiB buffer to the next rank and checks the one from the previous rank
(buffer protocol, no pickling: the large-message path), and an allreduce and a bcast of
a dict close it. Rank 0 prints a line starting "mpi4py_ring: OK"; a fault prints
"FAIL ..." and aborts the whole job (mpirun exits non-zero).
"""
import hashlib
import socket
import sys

from mpi4py import MPI


def pattern(n, seed):
    """n bytes that differ per seed and position (SHAKE-256 output)."""
    return bytearray(hashlib.shake_256(b"mpi4py_ring %d" % seed).digest(n))


def fail(comm, msg):
    print("FAIL rank %d on %s: %s" % (comm.Get_rank(), socket.gethostname(), msg),
          file=sys.stderr, flush=True)
    comm.Abort(1)


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    nxt, prv = (rank + 1) % size, (rank - 1) % size

    # a token around the ring: every rank adds its host name
    if rank == 0:
        comm.send([socket.gethostname()], dest=nxt)
        token = comm.recv(source=prv)
        if len(token) != size:
            fail(comm, "the token came back with %d hosts, not %d" % (len(token), size))
    else:
        comm.send(comm.recv(source=prv) + [socket.gethostname()], dest=nxt)
        token = None

    # buffers: 1 MiB to the next rank, checked
    n = 1 << 20
    got = bytearray(n)
    comm.Sendrecv(pattern(n, rank), dest=nxt, recvbuf=got, source=prv)
    want = pattern(n, prv)
    if got != want:
        bad = next(i for i in range(n) if got[i] != want[i])
        fail(comm, "byte %d of the 1 MiB buffer from rank %d is wrong" % (bad, prv))

    total = comm.allreduce(rank + 1)
    info = comm.bcast({"hosts": token} if rank == 0 else None, root=0)
    if total != size * (size + 1) // 2 or len(info["hosts"]) != size:
        fail(comm, "allreduce gave %d, bcast %r" % (total, info))
    comm.Barrier()
    if rank == 0:
        print("mpi4py_ring: OK: %d ranks on %s: token around the ring, 1 MiB buffers, "
              "allreduce, bcast" % (size, ",".join(info["hosts"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
