#!/usr/bin/python3
"""Scale benchmark: boot time and memory per node for 2, 4, 8 and 16 nodes.

    scripts/bench-scale.py [--topologies 2,ring:4,ring:8,double-ring:8] [--csv FILE]

For each topology: boots the cluster, reports launch-to-all-ready time and, per
node, the QEMU process's resident memory (VmRSS) and its peak (VmHWM). The card's
own cost is the difference to the same guest booted without the card (measured
once, 2 nodes). Prints a table and writes build/bench/scale.csv.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, ClusterError  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    out = {}
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def measure(**kw):
    t0 = time.monotonic()
    with Cluster(verbose=False, **kw) as c:
        ready = time.monotonic() - t0
        rc = c.run_all("cat /sys/class/peach2/peach2-0/link_e 2>/dev/null; true", timeout=120)
        del rc
        mem = [rss_kib(nd.proc.pid) for nd in c.nodes]
        return c.n, ready, mem


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topologies", default="2,ring:4,ring:8,double-ring:8")
    ap.add_argument("--csv", default=os.path.join(os.environ.get("PEACH2_BUILD", os.path.join(REPO, "build")),
                                                  "bench", "scale.csv"))
    a = ap.parse_args()
    rows = []
    try:
        _, _, bare = measure(n=2, with_device=False)
        _, _, card = measure(n=2)
        bare_rss = statistics.mean(m["VmRSS"] for m in bare) / 1024
        card_rss = statistics.mean(m["VmRSS"] for m in card) / 1024
        print("card overhead (2 nodes, same guest with vs. without -device peach2): "
              "%.1f MiB RSS per node (%.1f vs %.1f MiB)" % (card_rss - bare_rss, card_rss, bare_rss))
        for topo in a.topologies.split(","):
            n, ready, mem = measure(n=None, topology=topo)
            rss = [m["VmRSS"] / 1024 for m in mem]
            hwm = [m["VmHWM"] / 1024 for m in mem]
            rows.append((topo, n, ready, statistics.mean(rss), max(rss), max(hwm)))
            print("  %s: %d nodes ready in %.1f s" % (topo, n, ready), file=sys.stderr)
    except ClusterError as e:
        print("bench-scale: %s" % e, file=sys.stderr)
        return 1
    print("\n%-16s %6s %14s %16s %15s %16s" % ("topology", "nodes", "all ready (s)",
                                                "RSS/node (MiB)", "max RSS (MiB)", "peak RSS (MiB)"))
    for r in rows:
        print("%-16s %6d %14.1f %16.1f %15.1f %16.1f" % r)
    os.makedirs(os.path.dirname(a.csv), exist_ok=True)
    with open(a.csv, "w", encoding="utf-8") as f:
        f.write("topology,nodes,ready_s,rss_mean_mib,rss_max_mib,hwm_max_mib,card_overhead_mib\n")
        for r in rows:
            f.write("%s,%d,%.2f,%.1f,%.1f,%.1f,%.1f\n" % (r + (card_rss - bare_rss,)))
    print("\nCSV written to %s" % a.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
