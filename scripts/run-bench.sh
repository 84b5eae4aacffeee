#!/usr/bin/env bash
# make bench: the benchmarks; tables on stdout, CSV in build/bench/.
#   1. PIO ping-pong (demo.py --bench; arguments go to it)
#   2. DMA latency and bandwidth in every descriptor mode (bench-dma.py)
#   3. read proxy: get latency/bandwidth and CAS/FAA beside put (bench-get.py)
#   4. TCA Verbs: Debian's perftest beside raw put/DMA/get (bench-verbs.py)
#   5. every CSV drawn as build/bench/{pio,dma,get,crossover}.{png,svg} with the
#      papers' figures beside them (plot-bench.py)
set -e
here=$(dirname "$0")
/usr/bin/python3 "$here/demo.py" --bench "$@"
/usr/bin/python3 "$here/bench-dma.py"
/usr/bin/python3 "$here/bench-get.py"
/usr/bin/python3 "$here/bench-verbs.py"
exec /usr/bin/python3 "$here/plot-bench.py"
