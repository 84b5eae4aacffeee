#!/usr/bin/python3
"""MPI at scale: boot an 8-node ring (and, with --sixteen, a 16-node double ring) and run
the project's MPI correctness programs with one rank per node, for Open MPI and MPICH over
the cards; print a table (seconds, the program's OK line, card and management-network
bytes per node) and exit 1 if any run fails or its bytes did not go over the cards.

    scripts/bench-mpi-scale.py                 # make bench: ring:8
    scripts/bench-mpi-scale.py --sixteen       # also double-ring:8 (16 nodes, slow)

Benchmark-only (issue 12): 8 and 16 TCG guests on 2 cores take minutes per job, too long
for `make check`, which runs the same programs on 2 and 4 nodes (tests/test_mpi.py). On a
ring of 8, ranks up to four hops apart talk through cards that only forward; a double ring
adds the S ports between the rings.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (MGMT_SLACK, bench_csv, card_bytes, kernels_clean,  # noqa: E402
                      mgmt_bytes, mpi_launch)
from cluster import Cluster, ClusterError  # noqa: E402

MPIS = ("openmpi", "mpich")
PROGRAMS = ("mpi_collectives.%", "mpi_halo.%", "mpi_onesided.%", "mpi_pingpong.% -n -M 64k")


def run_one(c, mpi, prog, timeout):
    """(ok, seconds, OK line or the failure, min card tx, max eth0 tx) of one job."""
    nodes = range(c.n)
    cards0 = [card_bytes(c, i)[0] for i in nodes]
    mgmt0 = [mgmt_bytes(c, i) for i in nodes]
    cmd = mpi_launch(mpi, c.n, prog)
    t0 = time.monotonic()
    try:
        rc, out = c.run(0, cmd + " 2>&1", timeout=timeout)
    except ClusterError as e:
        rc, out = -1, str(e)
    took = time.monotonic() - t0
    cards = [card_bytes(c, i)[0] - cards0[i] for i in nodes]
    mgmt = [mgmt_bytes(c, i) - mgmt0[i] for i in nodes]
    name = prog.split(".")[0]
    m = re.search(r"^%s: OK.*$" % name, out, re.M)
    why = None
    if rc != 0 or not m:
        # The cause is usually a line far above a UCX backtrace: show such lines first.
        said = [ln for ln in out.splitlines()
                if re.search(r"error|Error|Assertion|peach2|exceeded|FAIL", ln)
                and not re.match(r"\s*\d+\s+/", ln)][:20]
        why = "rc %d, no OK line; its error lines:\n%s\n--- its last lines:\n%s" % (
            rc, "\n".join(said) or "(none)", out[-3000:])
    elif max(mgmt) >= MGMT_SLACK:
        why = "eth0 carried %d bytes from one node (a TCP lane?)" % max(mgmt)
    elif min(cards) < 64 << 10:
        why = "a card sent only %d bytes" % min(cards)
    return why is None, took, (m.group(0) if why is None else why), min(cards), max(mgmt)


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("topology,nodes,mpi,program,ok,seconds,min_card_tx_bytes,max_eth0_tx_bytes\n")
        for r in rows:
            f.write("%s,%d,%s,%s,%d,%.1f,%d,%d\n" % r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sixteen", action="store_true",
                    help="also boot double-ring:8 (16 nodes) and run there")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per job (1200)")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    a = ap.parse_args()
    topologies = ["ring:8"] + (["double-ring:8"] if a.sixteen else [])
    rows = []
    failed = 0
    t_all = time.monotonic()
    for topo in topologies:
        t0 = time.monotonic()
        try:
            with Cluster(None, topology=topo) as c:
                print("\n%s: %d nodes ready in %.1f s; load: %s" % (
                    topo, c.n, time.monotonic() - t0, open("/proc/loadavg").read().split()[:3]))
                for mpi in MPIS:
                    for prog in PROGRAMS:
                        ok, took, what, card_min, mgmt_max = run_one(c, mpi, prog, a.timeout)
                        failed += not ok
                        shown = prog.replace(".%", "")
                        rows.append((topo, c.n, mpi, shown, ok, took, card_min, mgmt_max))
                        print("  %-6s %-24s %-4s %7.1f s  card tx >= %9d B  eth0 tx <= %7d B  %s"
                              % (mpi, shown, "ok" if ok else "FAIL", took, card_min, mgmt_max,
                                 what.splitlines()[0] if ok else ""), flush=True)
                        if not ok:
                            print(what, file=sys.stderr)
                if not kernels_clean(c, range(c.n)):
                    failed += 1
        except (ClusterError, RuntimeError) as e:  # RuntimeError: a guest counter unreadable
            failed += 1
            print("%s: %s" % (topo, e), file=sys.stderr)
    csv = a.csv or bench_csv("mpi-scale.csv")
    write_csv(csv, rows)
    print("\nMPI at scale: %d of %d jobs correct over the cards, %.0f s; CSV %s"
          % (len(rows) - sum(not r[4] for r in rows), len(rows), time.monotonic() - t_all, csv))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
