#!/usr/bin/env bash
# make bench: the benchmarks (PIO ping-pong for now); tables on stdout, CSV in build/bench/.
exec /usr/bin/python3 "$(dirname "$0")/demo.py" --bench "$@"
