#!/usr/bin/env bash
# make bench: the benchmarks; tables on stdout, CSV in build/bench/.
#   1. PIO ping-pong (demo.py --bench; arguments go to it)
#   2. DMA latency and bandwidth in every descriptor mode (bench-dma.py)
#   3. read proxy: get latency/bandwidth and CAS/FAA beside put (bench-get.py); 2 and 3 are
#      traced and print emulated / predicted (peach2-model) / paper rows
#   4. TCA Verbs: Debian's perftest beside raw put/DMA/get (bench-verbs.py)
#   4b. MPI ping-pong, Open MPI and MPICH over the cards and over TCP, beside perftest
#      (bench-mpi.py, issue 12)
#   5. the link transports (shared memory, socket) against the machine's anchors:
#      memcpy, unix-socket and ivshmem ping-pongs (bench-fastpath.py, issue 13)
#   5b. MPI correctness at scale: collectives, halo, one-sided, ping-pong on ring:8, one
#      rank per node (bench-mpi-scale.py; --sixteen adds double-ring:8 by hand)
#   6. every CSV drawn as build/bench/{pio,dma,get,crossover}.{png,svg} with the
#      papers' figures beside them (plot-bench.py)
# Every step runs even when one before it fails (a failed MPI job must not hide the
# fast-path figures); the failed steps are named at the end and make the exit status 1.
here=$(dirname "$0")
failed=()
step() {
  /usr/bin/python3 "$here/$1" "${@:2}" || failed+=("$1 (exit $?)")
}
step demo.py --bench "$@"
step bench-dma.py
step bench-get.py
step bench-verbs.py
step bench-mpi.py
# The transports' table before the eight-node run: right after it, on this 2-core host,
# the same table once read PIO 8 B p99 21 us and 4 MiB streams 9.5 GB/s, and alone
# 20 minutes later 2.7 us and 16 GB/s (docs/notes.md, twenty-second session).
step bench-fastpath.py
step bench-mpi-scale.py
step plot-bench.py
if [ ${#failed[@]} -gt 0 ]; then
  echo "make bench: ${#failed[@]} step(s) failed: ${failed[*]}; their output is above" >&2
  exit 1
fi
