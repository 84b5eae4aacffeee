#!/usr/bin/env bash
# make demo: boot 2 nodes and run the verified PIO ping-pong.
exec /usr/bin/python3 "$(dirname "$0")/demo.py" "$@"
