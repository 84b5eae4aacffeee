#!/usr/bin/python3
"""Run-to-run spread of RDMA Write bandwidth against raw DMA put, interleaved in one cluster.

    scripts/bench-write-spread.py [ROUNDS]   # default 4
    PEACH2_LINK_TRANSPORT=socket ... for the socket transport

Each round: tca_bench get --quick's DMA put stream at 1 MiB (bench-verbs' raw anchor),
then ib_write_bw -n 200 -s 1 MiB at perftest's default tx depth and at -t 16; prints the
figures with the host's 1-minute load after each (issue 11: a Write/DMA-put ratio from a
single run of bench-verbs is not a measurement, see docs/notes.md).
"""
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
bv = importlib.import_module("bench-verbs")
from cluster import Cluster  # noqa: E402


def load():
    return open("/proc/loadavg").read().split()[0]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    t0 = time.monotonic()
    with Cluster(2) as c:
        print("boot %.1f s" % (time.monotonic() - t0), flush=True)
        port = 18700
        for r in range(rounds):
            raw, _ = bv.raw_anchors(c, True)
            res = [("raw_dma_put", raw["dma_put_1m"], load())]
            for extra in ("", "-t 16"):
                port += 1
                out = bv.perftest(c, "ib_write_bw", "-n 200 -s 1048576 %s" % extra, port)
                res.append(("ib_write_bw" + extra.replace(" ", ""), bv.bw_row(out, 1048576),
                            load()))
            print("round %d: %s  write/raw %.2f" % (
                r + 1, "  ".join("%s %.0f (load %s)" % x for x in res), res[1][1] / res[0][1]),
                flush=True)


if __name__ == "__main__":
    main()
