#!/usr/bin/env bash
# make bench: the benchmarks; tables on stdout, CSV in build/bench/.
#   1. PIO ping-pong (demo.py --bench; arguments go to it)
#   2. DMA latency and bandwidth in every descriptor mode (bench-dma.py)
#   3. read proxy: get latency/bandwidth and CAS/FAA beside put (bench-get.py); 2 and 3 are
#      traced and print emulated / predicted (peach2-model) / paper rows
#   4. TCA Verbs: Debian's perftest beside raw put/DMA/get (bench-verbs.py)
#   4b. MPI ping-pong, Open MPI and MPICH over the cards and over TCP, beside perftest
#      (bench-mpi.py, issue 12)
#   4c. MPI correctness at scale: collectives, halo, one-sided, ping-pong on ring:8, one
#      rank per node (bench-mpi-scale.py; --sixteen adds double-ring:8 by hand)
#   5. the link transports (shared memory, socket) against the machine's anchors:
#      memcpy, unix-socket and ivshmem ping-pongs (bench-fastpath.py, issue 13)
#   6. every CSV drawn as build/bench/{pio,dma,get,crossover}.{png,svg} with the
#      papers' figures beside them (plot-bench.py)
set -e
here=$(dirname "$0")
/usr/bin/python3 "$here/demo.py" --bench "$@"
/usr/bin/python3 "$here/bench-dma.py"
/usr/bin/python3 "$here/bench-get.py"
/usr/bin/python3 "$here/bench-verbs.py"
/usr/bin/python3 "$here/bench-mpi.py"
/usr/bin/python3 "$here/bench-mpi-scale.py"
/usr/bin/python3 "$here/bench-fastpath.py"
exec /usr/bin/python3 "$here/plot-bench.py"
