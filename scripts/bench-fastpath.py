#!/usr/bin/python3
"""The link transports against the machine's limits: direct writes, rings, socket, with anchors.

    scripts/bench-fastpath.py            # make bench (issue 13's table)
    scripts/bench-fastpath.py --quick    # fewer iterations, for a smoke run

One run measures, in this order:
  host anchors      tca_anchor memcpy (1 MiB, 8 MiB), unix-socket and shared-memory
                    ping-pongs between two host processes
  per transport     two guests booted with the cables on the shared-memory transport with
                    direct writes (shm, the default), on its rings only (shm-ring) and on
                    the socket (cluster.py --link-transport), each
                    with an ivshmem-plain device on one shared memory-backend-file:
                    a guest system call (tca_anchor syscall), the ivshmem ping-pong
                    between the same two guests (tca_anchor ivshmem), PIO put ping-pong
                    8 B / 4 KiB (three rounds: the table has their medians), DMA put
                    stream 1 MiB, get 8 B / 1 MiB and CAS, long DMA put streams of
                    1 MiB and 4 MiB puts
  once more         the long DMA put streams on shm with dma-pause-us=0 (no pacing pause)
and prints one table with the ratios against the anchors and issue 13's goals (reported,
not asserted). Writes build/bench/fastpath.csv. Exit status is non-zero if a cluster does
not boot, a message is not verified, or a guest kernel reports a problem.
"""
import argparse
import csv
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import bench_csv, kernels_clean  # noqa: E402
from cluster import Cluster, ClusterError, build_dir  # noqa: E402

MIB = 1 << 20
IVSHMEM_BYTES = 4 * MIB
TRANSPORTS = ("shm", "shm-ring", "socket")
NOPAUSE = "shm, dma-pause-us=0"  # the long DMA streams once more, without the pacing pause


def rows_of(text):
    """CSV rows (tca_bench / tca_anchor format) found in a program's output table."""
    lines = [l for l in text.splitlines() if l.strip()]
    for k, l in enumerate(lines):
        if l.split()[:3] == ["test", "mode", "size"]:
            out = []
            for row in lines[k + 1:]:
                f = row.split()
                if len(f) != 9 or not f[2].isdigit():
                    break
                num = lambda s: None if s == "-" else float(s)  # noqa: E731
                out.append({"test": f[0], "size": int(f[2]), "median_us": num(f[5]),
                            "p99_us": num(f[6]), "mb_per_s": num(f[7])})
            return out
    return []


# Latency steps run this many times (a few seconds each): the host's state moves between
# runs more than within one (docs/notes.md, twenty-eighth session), so the table takes the
# median of the rounds' figures; each round is printed above it. Not the get step: its
# streams read lower in a second run on the same guests (the guests' page layout).
LATENCY_ROUNDS = {"pio": 3}


def median_rows(rounds):
    """One table from several runs of a program: each figure the median over the runs
    that have it (a single run's rows unchanged)."""
    if len(rounds) <= 1:
        return rounds[0] if rounds else []
    out = []
    for row in rounds[0]:
        same = [r for rows in rounds for r in rows
                if r["test"] == row["test"] and r["size"] == row["size"]]
        merged = dict(row)
        for field in ("median_us", "p99_us", "mb_per_s"):
            vals = [r[field] for r in same if r[field] is not None]
            merged[field] = statistics.median(vals) if vals else None
        out.append(merged)
    return out


def pick(rows, test, size, field):
    for r in rows:
        if r["test"] == test and r["size"] == size:
            return r[field]
    return None


def host_anchors(quick):
    tool = os.path.join(build_dir(), "userlib", "bin", "tca_anchor")
    iters = "300" if quick else "2000"
    res = {}
    for args in (["memcpy"], ["unix", "--sizes", "8,4096", "--iters", iters],
                 ["shm", "--sizes", "8,4096", "--iters", iters]):
        r = subprocess.run([tool] + args, capture_output=True, text=True, timeout=300)
        print("$ tca_anchor %s\n%s" % (" ".join(args), r.stdout.rstrip()))
        if r.returncode != 0:
            raise ClusterError("tca_anchor %s failed: %s" % (args[0], r.stderr.strip()))
        res[args[0]] = rows_of(r.stdout)
    return res


def guest_figures(transport, run_dir, quick, device_props=None, only=None):
    """Boot two guests on one transport; the figures of issue 13's table (`only`: the
    names of the steps to run)."""
    mem_path = os.path.join(run_dir, "ivshmem-%s" % transport)
    with open(mem_path, "wb") as f:
        f.truncate(IVSHMEM_BYTES)
    ivshmem = ["-object", "memory-backend-file,id=ivsh,share=on,mem-path=%s,size=%d"
               % (mem_path, IVSHMEM_BYTES), "-device", "ivshmem-plain,memdev=ivsh"]
    it = 300 if quick else 2000
    fig, ok = {}, True
    t0 = time.monotonic()
    try:
        with Cluster(2, link_transport=transport, qemu_args=ivshmem,
                     device_props=device_props) as c:
            print("\n##### %s transport: 2 nodes ready in %.1f s" % (transport, time.monotonic() - t0))
            print("node0 link E: %s" % c.run(0, "cat /sys/class/peach2/peach2-0/link_e")[1].strip())
            nonce = random.randrange(1, 1 << 32)
            steps = [
                ("syscall", lambda i: "tca_anchor syscall --iters %d" % it),
                ("ivshmem", lambda i: "tca_anchor ivshmem --role %s --nonce %d --sizes 8,4096 --iters %d"
                 % ("ping" if i == 0 else "pong", nonce, it)),
                ("pio", lambda i: "tca_bench pingpong --peer %d --sizes 8,4096 --iters %d" % (1 - i, it)),
                ("dma", lambda i: "tca_bench dma --peer %d --modes host --sizes 1M --no-latency "
                 "--stream-bytes %dM" % (1 - i, 32 if quick else 256)),
                ("get", lambda i: "tca_bench get --peer %d --sizes 8,1M --iters %d --stream-bytes %dM"
                 % (1 - i, 100 if quick else 500, 16 if quick else 64)),
                # Long put streams (the one above is a few ms), 1 MiB and 4 MiB per put.
                ("stream1m", lambda i: "tca_bench get --peer %d --sizes 8 --iters 10 --put-size 1M "
                 "--stream-bytes %dM" % (1 - i, 256 if quick else 4096)),
                ("stream4m", lambda i: "tca_bench get --peer %d --sizes 8 --iters 10 --put-size 4M "
                 "--stream-bytes %dM" % (1 - i, 256 if quick else 4096)),
            ]
            for name, cmd in steps:
                if only and name not in only:
                    continue
                rounds = []
                for r in range(1 if quick else LATENCY_ROUNDS.get(name, 1)):
                    res = c.run_all(cmd, timeout=1800)
                    for i, (rc, out) in enumerate(res):
                        if rc != 0:
                            print("=== %s node%d exit %d ===\n%s" % (name, i, rc, out.rstrip()))
                            ok = False
                    print("--- %s (node0)%s ---\n%s" % (name, " round %d" % (r + 1) if r else "",
                                                       res[0][1].rstrip()))
                    rounds.append(rows_of(res[0][1]))
                fig[name] = median_rows(rounds)
            for i in range(2):
                print("node%d: %s" % (i, c.run(i, "cat /sys/class/peach2/peach2-0/counters 2>/dev/null "
                                                  "| head -3")[1].strip()))
            ok &= kernels_clean(c, range(2))
    except ClusterError as e:
        print("bench-fastpath (%s): %s" % (transport, e), file=sys.stderr)
        return None, False
    return fig, ok


def table(anchors, figs):
    """(printable lines, CSV rows): every figure, the anchors, ratios and goals."""
    def g(t, name, test, size, field="median_us"):
        return pick(figs.get(t, {}).get(name, []), test, size, field)

    memcpy = pick(anchors["memcpy"], "memcpy", MIB, "mb_per_s")
    out = ["%-30s %12s %12s %12s %12s %10s  %s" % ("figure", "shm", "shm-ring", "socket", "anchor",
                                                   "shm/anchor", "goal (issue 13)")]
    rows = []

    def line(label, per_transport, anchor, goal, unit, source=None):
        """per_transport: (name, test, size, field) of the figure, or None (anchor rows);
        source: take the shm column from that configuration's figures instead."""
        def f(v):
            return "-" if v is None else ("%.2f" % v if v < 100 else "%.0f" % v)
        vals = {t: g(t, *per_transport) if per_transport and not source else None
                for t in TRANSPORTS}
        if source:
            vals["shm"] = g(source, *per_transport)
        shm = vals["shm"]
        ratio = (shm / anchor if unit == "us" else anchor / shm) if shm and anchor else None
        out.append("%-30s %12s %12s %12s %12s %10s  %s" % (
            label, f(shm), f(vals["shm-ring"]), f(vals["socket"]), f(anchor),
            "-" if ratio is None else "%.1fx" % ratio, goal))
        rows.append(dict(figure=label, unit=unit, anchor=anchor, **vals))

    for size, goal in ((8, "<= 5 us, <= 20x ivshmem"), (4096, "<= 20 us, <= 20x ivshmem")):
        iv = next((v for v in (g(t, "ivshmem", "ivshmem", size) for t in TRANSPORTS) if v), None)
        line("PIO put %d B median us" % size, ("pio", "latency", size, "median_us"), iv, goal, "us")
        line("PIO put %d B p99 us" % size, ("pio", "latency", size, "p99_us"),
             g("shm", "ivshmem", "ivshmem", size, "p99_us"), "p99 <= 5x median", "us")
    # The tca_bench dma stream checks every message in the guest (TCG-bound); the get
    # bench's put stream does not. memcpy: 1 MiB stays in the host's caches, 8 MiB not.
    memcpy8 = pick(anchors["memcpy"], "memcpy", 8 * MIB, "mb_per_s")
    line("DMA put 1 MiB MB/s, checked", ("dma", "stream", MIB, "mb_per_s"), memcpy,
         ">= 2500 MB/s, >= 50% memcpy", "MB/s")
    line("DMA put 1 MiB MB/s, stream", ("get", "dma_put_stream", MIB, "mb_per_s"), memcpy8,
         "as above (anchor: memcpy 8 MiB)", "MB/s")
    for size, step in ((MIB, "stream1m"), (4 * MIB, "stream4m")):
        line("DMA put %d MiB MB/s, long stream" % (size // MIB),
             (step, "dma_put_stream", size, "mb_per_s"), memcpy8, ">= 50% memcpy 8 MiB", "MB/s")
    for size, step in ((MIB, "stream1m"), (4 * MIB, "stream4m")):
        line("DMA put %d MiB, dma-pause-us=0" % (size // MIB),
             (step, "dma_put_stream", size, "mb_per_s"), memcpy8,
             "long stream, no pacing pause (docs/hardware.md s6)", "MB/s", source=NOPAUSE)
    line("get 8 B median us", ("get", "get", 8, "median_us"), g("shm", "get", "put_pio", 8),
         "<= 3x put 8 B (anchor: put)", "us")
    # Where a get's time goes (docs/notes.md, twenty-eighth session): a put is stores
    # alone; a get is a system call on the requester and the target's driver serving it.
    line("  CAS 8 B median us", ("get", "cas", 8, "median_us"), g("shm", "get", "put_pio", 8),
         "a get without reply data (anchor: put)", "us")
    line("  guest system call us", ("syscall", "syscall", 0, "median_us"),
         g("shm", "get", "put_pio", 8), "getppid; a get makes one (anchor: put)", "us")
    # Like with like, as tca_bench get's own ratio: its get stream (4 in flight) against
    # its put stream (4 in flight), the same bytes, both after untimed warm-up messages.
    line("get 1 MiB MB/s, stream", ("get", "get_stream", MIB, "mb_per_s"),
         g("shm", "get", "dma_put_stream", MIB, "mb_per_s"), ">= 80% DMA put (anchor: put stream)",
         "MB/s")
    line("get 1 MiB MB/s, long stream", ("stream1m", "get_stream", MIB, "mb_per_s"),
         g("shm", "stream1m", "dma_put_stream", MIB, "mb_per_s"),
         "as above (anchor: the long put stream)", "MB/s")
    line("get 1 MiB MB/s, one at a time", ("get", "get", MIB, "mb_per_s"),
         g("shm", "get", "dma_put_stream", MIB, "mb_per_s"),
         "a round trip per get (anchor: put stream)", "MB/s")
    for size in (8, 4096):
        line("anchor: unix %d B us" % size, None, pick(anchors["unix"], "unix", size, "median_us"),
             "host processes", "us")
        line("anchor: host shm %d B us" % size, None, pick(anchors["shm"], "shm", size, "median_us"),
             "host processes", "us")
    line("anchor: memcpy 1 MiB MB/s", None, memcpy, "host", "MB/s")
    line("anchor: memcpy 8 MiB MB/s", None, memcpy8, "host", "MB/s")
    return out, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations and bytes")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    args = ap.parse_args()
    csv_host = args.csv or bench_csv("fastpath.csv")
    with open("/proc/loadavg") as f:
        print("host load average before the run: %s" % f.read().strip())
    try:
        anchors = host_anchors(args.quick)
    except (ClusterError, OSError, subprocess.SubprocessError) as e:
        print("bench-fastpath: %s" % e, file=sys.stderr)
        return 1
    ok = True
    figs = {}
    with tempfile.TemporaryDirectory(prefix="peach2-ivshmem-") as run_dir:
        for transport in TRANSPORTS:
            fig, good = guest_figures(transport, run_dir, args.quick)
            ok &= good
            if fig:
                figs[transport] = fig
        fig, good = guest_figures("shm", run_dir, args.quick, device_props={"dma-pause-us": 0},
                                  only=("stream1m", "stream4m"))
        ok &= good
        if fig:
            figs[NOPAUSE] = fig
    lines, rows = table(anchors, figs)
    print("\n=== issue 13: link transports against the anchors (medians; ratios: how far from the anchor) ===")
    print("\n".join(lines))
    os.makedirs(os.path.dirname(csv_host), exist_ok=True)
    with open(csv_host, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["figure", "unit"] + list(TRANSPORTS) + ["anchor"])
        w.writeheader()
        w.writerows(rows)
    print("\nCSV written to %s" % csv_host)
    with open("/proc/loadavg") as f:
        print("host load average after the run: %s" % f.read().strip())
    print("\nbench-fastpath: %s" % ("PASS: every message verified" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
