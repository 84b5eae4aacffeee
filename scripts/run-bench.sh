#!/usr/bin/env bash
# make bench: the benchmarks; tables on stdout, CSV in build/bench/.
#   1. PIO ping-pong (demo.py --bench; arguments go to it)
#   2. DMA latency and bandwidth in every descriptor mode (bench-dma.py)
set -e
here=$(dirname "$0")
/usr/bin/python3 "$here/demo.py" --bench "$@"
exec /usr/bin/python3 "$here/bench-dma.py"
