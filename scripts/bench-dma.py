#!/usr/bin/python3
"""Boot two nodes, run the DMA benchmark (tca_bench dma) between them, print the tables.

    scripts/bench-dma.py              # make bench (after the PIO ping-pong)
    scripts/bench-dma.py --quick      # fewer iterations and bytes, for a smoke run

Modes: register mode, on-card descriptors, host descriptors, and PIO for comparison.
Latency is ping-pong (payload plus a completion word, polled in the receiver's memory),
bandwidth is a stream of messages back to back; every message is verified in the guest.
Also measured, for context: a local DMA copy on one node (no link) and the PIO/DMA
crossover that tcaPutAuto's threshold comes from. Writes build/bench/dma.csv, dma_local.csv
and crossover.csv (scripts/plot-bench.py draws them).

The run is traced (build/bench/trace-dma/, docs/trace-format.md; --no-trace: not) and
every latency and stream row is printed again beside peach2-model's prediction for real
PEACH2 cards and the papers' figure (scripts/benchmodel.py).

Targets are reported, not asserted: >= 1 GB/s for 1 MiB transfers between the two VMs,
and DMA 4 B latency <= 1.5 x PIO 4 B latency (same run). Exit status is non-zero if the
cluster does not boot, a message is not verified, or a guest kernel reports a problem.
"""
import argparse
import csv
import io
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmodel  # noqa: E402
from benchlib import bench_csv, kernels_clean, save_guest_csv  # noqa: E402
from cluster import Cluster, ClusterError  # noqa: E402

MIB = 1 << 20


def targets(rows):
    """Lines comparing the ping side's CSV rows with the targets."""
    out = []
    stream_1m = {r["mode"]: float(r["mb_per_s"]) for r in rows
                 if r["test"] == "stream" and int(r["size"]) == MIB and r["mb_per_s"]}
    for mode, mbs in sorted(stream_1m.items()):
        out.append("target: 1 MiB stream, %-4s %8.1f MB/s (>= 1000 MB/s: %s)"
                   % (mode, mbs, "met" if mbs >= 1000 else "NOT met"))
    lat4 = {r["mode"]: float(r["median_us"]) for r in rows
            if r["test"] == "latency" and int(r["size"]) == 4 and r["median_us"]}
    if "pio" in lat4:
        for mode in ("reg", "card", "host"):
            if mode in lat4:
                ratio = lat4[mode] / lat4["pio"]
                out.append("target: 4 B latency, %-4s %8.1f us = %.2f x PIO %.1f us (<= 1.5 x: %s)"
                           % (mode, lat4[mode], ratio, lat4["pio"], "met" if ratio <= 1.5 else "NOT met"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations and bytes")
    ap.add_argument("--args", default="", help="extra tca_bench dma arguments (both nodes)")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    ap.add_argument("--no-trace", action="store_true",
                    help="do not trace the run (no predicted column)")
    args = ap.parse_args()
    csv_host = args.csv or bench_csv("dma.csv")

    def csv_dir(name):  # the other CSVs go beside the main one
        return os.path.join(os.path.dirname(csv_host), name)
    # tca_bench dma's sizes (4 B .. 4 MiB by 4), and 8 B: the papers' minimum latencies.
    sizes = sorted(benchmodel.Params().sizes + [8])
    if args.quick:
        params = benchmodel.Params(sizes=sizes, iters=50, latency_bytes=8 * MIB,
                                   stream_bytes=32 * MIB, pio_max=16384)
    else:
        params = benchmodel.Params(sizes=sizes, iters=500, latency_bytes=64 * MIB,
                                   stream_bytes=256 * MIB, pio_max=65536)
    bench = params.args() + " " + args.args
    trace_dir = None if args.no_trace else csv_dir("trace-dma")
    if trace_dir:
        shutil.rmtree(trace_dir, ignore_errors=True)

    ok = True
    t0 = time.monotonic()
    try:
        with Cluster(2, trace=trace_dir) as c:
            print("cluster: 2 nodes ready in %.1f s" % (time.monotonic() - t0))
            print("node0 link E: %s" % c.run(0, "cat /sys/class/peach2/peach2-0/link_e")[1].strip())
            t1 = time.monotonic()
            results = c.run_all(lambda i: "tca_bench dma --peer %d %s%s"
                                % (1 - i, bench, " --csv /tmp/dma.csv" if i == 0 else ""),
                                timeout=3600)
            print("tca_bench dma: %.0f s" % (time.monotonic() - t1))
            for i, (rc, out) in enumerate(results):
                if i == 0 or rc != 0:
                    print("\n=== node%d (%s side), exit %d ===" % (i, "ping" if i == 0 else "pong", rc))
                    print(out.rstrip())
                else:
                    print("\n=== node1 (pong side), exit 0: %s" % out.strip().splitlines()[-1])
                ok &= rc == 0
            rows = []
            if ok:
                text = save_guest_csv(c, 0, "/tmp/dma.csv", csv_host)
                ok &= text is not None
                rows = list(csv.DictReader(io.StringIO(text or "")))

            print("\n=== context ===")
            rc, out = c.run(0, "tca_bench dma-local --size 8M --count 32 --mode card "
                            "--csv /tmp/dma_local.csv", timeout=600)
            print(out.strip().splitlines()[0] if out.strip() else "(no output)")
            ok &= rc == 0 and save_guest_csv(c, 0, "/tmp/dma_local.csv", csv_dir("dma_local.csv")) is not None
            res = c.run_all(lambda i: "tca_bench crossover --peer %d --iters 100%s"
                            % (1 - i, " --csv /tmp/crossover.csv" if i == 0 else ""), timeout=600)
            print(res[0][1].rstrip())
            ok &= res[0][0] == 0 and res[1][0] == 0
            ok &= save_guest_csv(c, 0, "/tmp/crossover.csv", csv_dir("crossover.csv")) is not None

            print("\n=== targets (reported, not asserted) ===")
            for line in targets(rows):
                print(line)
            ok &= kernels_clean(c, range(2))
    except ClusterError as e:
        print("bench-dma: %s" % e, file=sys.stderr)
        return 1
    if trace_dir and rows:
        ok &= benchmodel.compare(trace_dir, rows, lambda ops: benchmodel.predict(ops, params),
                                 "bench-dma")
    print("\nbench-dma: %s" % ("PASS: every message verified" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
