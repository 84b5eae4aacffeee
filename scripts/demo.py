#!/usr/bin/python3
"""Boot a cluster, run PIO ping-pong between node 0 and node 1, print the table.

    scripts/demo.py                 # make demo: 2 nodes, sizes 4 B .. 4 KiB
    scripts/demo.py --bench         # make bench: more iterations, CSV under build/bench/

Exit status is non-zero if the cluster does not boot, a message is not verified byte for
byte, or a guest kernel reports a problem.
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
    ap.add_argument("--nodes", type=int, default=2, help="cluster size (ping-pong runs 0 <-> 1)")
    ap.add_argument("--iters", type=int, default=None, help="round trips per size")
    ap.add_argument("--bench", action="store_true", help="benchmark mode: more iterations, CSV")
    ap.add_argument("--csv", default=None, help="where to write the CSV (bench mode)")
    args = ap.parse_args()
    iters = args.iters or (2000 if args.bench else 200)
    csv_host = args.csv or bench_csv("pio_pingpong.csv")

    t0 = time.monotonic()
    try:
        with Cluster(args.nodes) as c:
            ready = time.monotonic() - t0
            print("cluster: %d nodes ready in %.1f s (launch to all guests ready)" % (args.nodes, ready))
            links = c.run(0, "cat /sys/class/peach2/peach2-0/link_e")[1].strip()
            print("node0 link E: %s" % links)

            def cmd(i):
                if i > 1:
                    return "true"
                line = "tca_bench pingpong --peer %d --min 4 --max 4096 --iters %d" % (1 - i, iters)
                if args.bench and i == 0:
                    line += " --csv /tmp/pingpong.csv"
                return line

            results = c.run_all(cmd, timeout=1800)
            ok = True
            for i, (rc, out) in enumerate(results[:2]):
                role = "ping" if i == 0 else "pong"
                print("\n=== node%d (%s side), exit %d ===" % (i, role, rc))
                print(out.rstrip())
                ok &= rc == 0
            if args.bench and ok:
                save_guest_csv(c, 0, "/tmp/pingpong.csv", csv_host)
            ok &= kernels_clean(c, range(args.nodes))
    except ClusterError as e:
        print("demo: %s" % e, file=sys.stderr)
        return 1
    print("\ndemo: %s" % ("PASS: every message verified byte for byte" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
