#!/usr/bin/python3
"""Boot two nodes, run the read-proxy benchmark (tca_bench get) between them, print it.

    scripts/bench-get.py              # make bench (after the PIO and DMA benchmarks)
    scripts/bench-get.py --quick      # fewer iterations and bytes, for a smoke run

Node 0 measures, node 1 serves. With node 1's process taking part: PIO put latency for
8 B (ping-pong, one-way = RTT/2) and DMA put bandwidth for 1 MiB messages. Then node 1's
process only sleeps while node 0 measures one-sided get latency (4 B .. 1 MiB), streaming
get bandwidth, and CAS/FAA latency; node 1's driver serves every request. Every get is
verified. Writes build/bench/get.csv.

Targets are reported, not asserted (issue 5): get 8 B latency <= 3 x put 8 B latency,
and get bandwidth for 1 MiB >= 80 % of DMA put bandwidth, both from the same run. Exit
status is non-zero if the cluster does not boot, a get is not verified, or a guest
kernel reports a problem.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import bench_csv, kernels_clean, save_guest_csv  # noqa: E402
from cluster import Cluster, ClusterError  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations and bytes")
    ap.add_argument("--args", default="", help="extra tca_bench get arguments (both nodes)")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    args = ap.parse_args()
    csv_host = args.csv or bench_csv("get.csv")
    if args.quick:
        bench = "--iters 30 --latency-bytes 8M --stream-bytes 32M"
    else:
        bench = "--iters 500 --latency-bytes 64M --stream-bytes 256M"
    bench += " " + args.args

    ok = True
    t0 = time.monotonic()
    try:
        with Cluster(2) as c:
            print("cluster: 2 nodes ready in %.1f s" % (time.monotonic() - t0))
            t1 = time.monotonic()
            results = c.run_all(lambda i: "tca_bench get --peer %d %s%s"
                                % (1 - i, bench, " --csv /tmp/get.csv" if i == 0 else ""),
                                timeout=3600)
            print("tca_bench get: %.0f s" % (time.monotonic() - t1))
            for i, (rc, out) in enumerate(results):
                print("\n=== node%d (%s), exit %d ===" % (i, "client" if i == 0 else "server", rc))
                print(out.rstrip())
                ok &= rc == 0
            if ok:
                ok &= save_guest_csv(c, 0, "/tmp/get.csv", csv_host) is not None
            print("\n=== node1 read proxy counters ===")
            print(c.run(1, "cat /sys/class/peach2/peach2-0/rproxy")[1].rstrip())
            ok &= kernels_clean(c, range(2))
    except ClusterError as e:
        print("bench-get: %s" % e, file=sys.stderr)
        return 1
    print("\nbench-get: %s" % ("PASS: every get verified" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
