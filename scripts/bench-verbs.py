#!/usr/bin/python3
"""Boot two nodes and measure TCA Verbs with Debian's perftest, beside libtca's raw
PIO put, DMA put and get from the same run; print the table and the goals.

    scripts/bench-verbs.py            # make bench (after the libtca benchmarks)
    scripts/bench-verbs.py --quick    # fewer iterations, for a smoke run

Raw anchors: DMA put stream at 1 MiB, get 8 B latency and get stream at 1 MiB
(tca_bench get, node 1 serving); PIO put 8 B one-way latency (tca_bench pingpong: a
payload put, then a flag put). The 8-byte latency goal compares figures that swing 2-3x
between runs of TCG guests, so the PIO ping-pong, ib_write_lat and ib_send_lat at 8 B run
in interleaved rounds (--rounds): the table shows the median of the rounds' medians and the
least minimum, the goal line each round's ratio and their median. Then (node 1 the perftest
server) ib_send_lat, ib_write_lat at 4 KiB, ib_read_lat at 8 B and 4 KiB, ib_atomic_lat
(one-way = RTT/2 as perftest reports for Send/Write; Read and atomics are round trips; a run
that prints inf, perftest's clock check on a loaded host, is run again), and ib_write_bw,
ib_send_bw, ib_read_bw at 64 KiB and ib_send_bw at 1 MiB. The two bandwidth goals (1 MiB)
run in interleaved rounds (--bw-rounds) of the raw DMA put stream (tca_bench get's quick
anchor: 512 MiB after untimed warm-up puts), ib_write_bw and ib_read_bw (perftest's duration
mode: 3 s, the middle second measured): the table shows the medians, the goal lines each
round's ratio and their median. Each round also runs ib_write_bw with perftest's
--use_hugepages (2 MiB pages reserved in both guests): its buffers are a few physically
contiguous runs, like the raw put's tcaMalloc memory, where malloc'ed pages are one DMA
descriptor each, so the two Write figures separate the library's cost from the guest's
page layout. With --rp-chain-max 1,32 every round runs ib_read_bw once
per value of node 1's driver parameter rp_chain_max (1: one read-proxy request per chain
run, as before batching), so the two are compared on the same machine state. For each
Read figure: the read-proxy requests and chain runs per Read that node 1 served. Writes
build/bench/verbs.csv (test,size,median_us,mb_per_s,min_us).

Goals (issue 11), reported, not asserted: Send/Recv 8 B latency <= 1.25 x PIO put 8 B
latency (paper 000: 3.5 / 2.0 us = 1.75); RDMA Write bandwidth at 1 MiB >= 90 % of DMA
put; RDMA Read >= 80 %. The exit status is non-zero if the cluster does not boot, a
program fails, or a guest kernel reports a problem.
"""
import argparse
import csv
import io
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (PERFTEST_STEADY, add_mem_argument, bench_csv, kernels_clean,  # noqa: E402
                      perftest_pair)
from cluster import Cluster, ClusterError  # noqa: E402


def perftest(c, prog, args, port, timeout=1800):
    """Server on node 1, client on node 0: the client's output (its result rows)."""
    rc_s, out_s, rc_c, out_c = perftest_pair(c, 1, 0, "%s %s" % (prog, args), port, timeout)
    if rc_s or rc_c:
        raise RuntimeError("%s %s failed (server %d, client %d):\n--- server\n%s\n--- client\n%s"
                           % (prog, args, rc_s, rc_c, out_s, out_c))
    return out_c


def lat_row(out, size):
    """perftest latency row: (t_min, t_typical = the median) in us; None when perftest
    printed inf (its clock check failed: the guest's TSC rate looked unsteady, which a
    loaded host causes)."""
    m = re.search(r"^\s*%d\s+\d+\s+(\S+)\s+(\S+)\s+(\S+)" % size, out, re.M)
    if not m:
        raise RuntimeError("no result row for %d B:\n%s" % (size, out))
    if "inf" in (m.group(1), m.group(3)):
        return None
    return float(m.group(1)), float(m.group(3))


def perftest_lat(c, prog, size, n, port, tries=3):
    """A perftest latency run at one size: (min, median) in us, run again (up to `tries`
    times) when perftest's clock check makes it print inf."""
    args = "-n %d" % n + ("" if prog == "ib_atomic_lat" else " -s %d" % size)
    for _ in range(tries):
        row = lat_row(perftest(c, prog, args, port), size)
        if row:
            return row
        print("bench-verbs: %s %s printed inf (perftest's clock check); again" % (prog, args))
    raise RuntimeError("%s %s printed inf %d times" % (prog, args, tries))


def pio_pingpong(c, n):
    """libtca's PIO ping-pong at 8 B (payload put, then a flag put; one-way = RTT / 2):
    (min, median) in us, from node 0's CSV."""
    (rc0, out0), (rc1, out1) = c.run_all(
        lambda i: "tca_bench pingpong --peer %d --sizes 8 --iters %d" % (1 - i, n)
        + (" --csv /tmp/verbs-pio.csv" if i == 0 else ""), timeout=600)
    if rc0 or rc1:
        raise RuntimeError("tca_bench pingpong failed:\n%s\n%s" % (out0, out1))
    rc, text = c.run(0, "cat /tmp/verbs-pio.csv")
    row = next((r for r in csv.DictReader(io.StringIO(text)) if int(r["size"]) == 8), None) \
        if rc == 0 else None
    if not row:
        raise RuntimeError("tca_bench pingpong wrote no 8-byte row:\n%s" % out0)
    return float(row["min_us"]), float(row["median_us"])


def bw_row(out, size):
    """perftest bandwidth row: BW average in MB/s (perftest's MB is 2^20 bytes)."""
    m = re.search(r"^\s*%d\s+\d+\s+([\d.]+)\s+([\d.]+)" % size, out, re.M)
    if not m:
        raise RuntimeError("no result row for %d B:\n%s" % (size, out))
    return float(m.group(2)) * 1048576 / 1e6


def rp_counters(c, node):
    """The read-proxy counters of a node's driver (sysfs rproxy: "name value" lines)."""
    rc, text = c.run(node, "cat /sys/class/peach2/peach2-0/rproxy")
    return {k: int(v) for k, v in (ln.split() for ln in text.splitlines() if len(ln.split()) == 2)} \
        if rc == 0 else {}


def reads_served(delta, size):
    """How many Reads of `size` bytes node 1's read proxy answered (its read_bytes counter:
    perftest's duration mode counts only the Reads between its margins)."""
    return delta.get("read_bytes", 0) / size


def rp_note(size, delta):
    """What node 1's read proxy did for an ib_read_bw run of `size`-byte Reads."""
    served, runs = delta.get("served_read", 0), delta.get("reply_runs", 0)
    reads = max(reads_served(delta, size), 1)
    return ("ib_read_bw %d B: node 1 served %d read-proxy requests for %d Reads (%.1f per Read) "
            "in %d chain runs (%.1f requests per run); its card refused %d (ring full)"
            % (size, served, round(reads), served / reads, runs, served / runs if runs else 0,
               delta.get("card_rx_refused", 0)))


def raw_anchors(c, quick, stream_mib=None):
    """libtca's raw figures (tca_bench get, node 0 measuring, node 1 serving), from the
    CSV node 0 writes (test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified).
    stream_mib: the put and get streams' bytes (default 32 MiB quick, else 128 MiB);
    both streams start after untimed warm-up messages."""
    bench = ("--iters 30 --latency-bytes 4M" if quick else "--iters 300 --latency-bytes 32M") + \
        " --stream-bytes %dM" % (stream_mib or (32 if quick else 128))
    cmd = "tca_bench get --peer %d --sizes 8,1048576 " + bench
    (rc0, out0), (rc1, out1) = c.run_all(
        lambda i: cmd % (1 - i) + (" --csv /tmp/verbs-raw.csv" if i == 0 else ""), timeout=3600)
    if rc0 or rc1:
        raise RuntimeError("tca_bench get failed:\n%s\n%s" % (out0, out1))
    rc, text = c.run(0, "cat /tmp/verbs-raw.csv")
    if rc:
        raise RuntimeError("tca_bench get wrote no CSV:\n%s" % text)
    rows = {(r["test"], int(r["size"])): r for r in csv.DictReader(io.StringIO(text))}

    def med(test, size):
        return float(rows[(test, size)]["median_us"])

    def mbs(test, size):
        return float(rows[(test, size)]["mb_per_s"])

    return {"dma_put_1m": mbs("dma_put_stream", 1048576),
            "get_8": med("get", 8), "get_stream_1m": mbs("get_stream", 1048576)}, out0


def median(xs):
    return statistics.median(xs)


def load():
    """The host's 1-minute load average (other engineers' builds and VMs share it)."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return float(f.read().split()[0])


CHAIN_MAX = "/sys/module/peach2/parameters/rp_chain_max"


def chain_max(c, node, value=None):
    """Node's rp_chain_max (read-proxy requests per chain run); set it first if `value`."""
    if value is not None:
        rc, out = c.run(node, "echo %d > %s" % (value, CHAIN_MAX))
        if rc:
            raise RuntimeError("cannot set %s on node %d: %s" % (CHAIN_MAX, node, out))
    rc, out = c.run(node, "cat %s" % CHAIN_MAX)
    if rc:
        raise RuntimeError("no %s on node %d (driver too old?): %s" % (CHAIN_MAX, node, out))
    return int(out.split()[-1])


def read_bw(c, run_args, size, port):
    """ib_read_bw (node 1 the target) with `run_args` (-n or -D): (MB/s, node 1's
    read-proxy counter deltas)."""
    before = rp_counters(c, 1)
    out = perftest(c, "ib_read_bw", "%s -s %d" % (run_args, size), port)
    after = rp_counters(c, 1)
    return bw_row(out, size), {k: after[k] - before.get(k, 0) for k in after}


MIB = 1 << 20
HUGE_PAGES = 24  # 2 MiB pages per guest for ib_write_bw --use_hugepages (1 MiB messages)


def reserve_huge_pages(c, count):
    """Reserve `count` 2 MiB pages in both guests (0 gives them back): True if both have
    them (a guest whose memory is too scattered gets fewer; the row is then left out)."""
    got = []
    for i in range(2):
        rc, out = c.run(i, "echo %d > /proc/sys/vm/nr_hugepages; cat /proc/sys/vm/nr_hugepages"
                        % count)
        got.append(int(out.split()[-1]) if rc == 0 and out.split() else -1)
    if count and got != [count, count]:
        print("bench-verbs: huge pages reserved %s of %d: no ib_write_bw --use_hugepages row"
              % (got, count))
        reserve_huge_pages(c, 0)
        return False
    return True


def bw_rounds(c, rounds, run_args, anchor_mib, chain_values, port, huge=False):
    """The 1 MiB bandwidth goals in interleaved rounds, each: the raw DMA put stream
    (tca_bench get's quick anchor, `anchor_mib` MiB), ib_write_bw, then ib_read_bw once
    per rp_chain_max value of node 1 (None: as it is); the perftest runs with `run_args`.
    Returns the rounds as dicts and the last port."""
    def per_read(d):
        return max(reads_served(d, MIB), 1)

    out = []
    for r in range(rounds):
        raw, _ = raw_anchors(c, True, anchor_mib)
        port += 1
        res = {"dma": raw["dma_put_1m"], "load": [load()],
               "write": bw_row(perftest(c, "ib_write_bw", "%s -s 1048576" % run_args, port),
                               1048576),
               "read": {}}
        if huge:
            port += 1
            res["write_huge"] = bw_row(perftest(c, "ib_write_bw", "%s -s 1048576 "
                                                "--use_hugepages" % run_args, port), 1048576)
        # Alternate the order of the values, so that neither always runs first.
        for v in chain_values if r % 2 == 0 else chain_values[::-1]:
            if v is not None:
                chain_max(c, 1, v)
            port += 1
            res["read"][v] = read_bw(c, run_args, 1048576, port)
        res["load"].append(load())
        out.append(res)
        print("bw round %d (load %.1f -> %.1f): DMA put %.0f MB/s, ib_write_bw %.0f (%.2f)%s, "
              "ib_read_bw %s" % (r + 1, res["load"][0], res["load"][1], res["dma"], res["write"],
                                 res["write"] / res["dma"],
                                 " / from huge pages %.0f (%.2f)" % (
                                     res["write_huge"], res["write_huge"] / res["dma"])
                                 if huge else "",
                                 ", ".join("%s%.0f (%.2f; %.1f requests, %.1f runs per Read)"
                                           % ("" if v is None else "chain_max %d: " % v, mbs,
                                              mbs / res["dma"],
                                              d.get("served_read", 0) / per_read(d),
                                              d.get("reply_runs", 0) / per_read(d))
                                           for v, (mbs, d) in ((v, res["read"][v])
                                                               for v in chain_values))),
              flush=True)
    return out, port


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    add_mem_argument(ap)
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds of the interleaved 8-byte latency runs (default 5, quick 2)")
    ap.add_argument("--bw-rounds", type=int, default=None,
                    help="rounds of the interleaved 1 MiB bandwidth runs: raw DMA put, "
                    "ib_write_bw, ib_read_bw (default 3, quick 2)")
    ap.add_argument("--rp-chain-max", default=None, metavar="N[,N...]",
                    help="node 1's rp_chain_max values (read-proxy requests per chain run, "
                    "1..32); each round runs ib_read_bw 1 MiB once per value, e.g. 1,32 "
                    "compares one request per run with batches (default: as loaded)")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    args = ap.parse_args()
    try:
        chain_values = ([int(v) for v in args.rp_chain_max.split(",")] if args.rp_chain_max
                        else [None])
    except ValueError:
        ap.error("--rp-chain-max: a comma-separated list of numbers")
    if any(v is not None and not 1 <= v <= 32 for v in chain_values):
        ap.error("--rp-chain-max: values 1..32")
    csv_host = args.csv or bench_csv("verbs.csv")
    lat_n = 200 if args.quick else 2000
    bw_n = 50 if args.quick else 500
    # The 1 MiB goal runs time perftest's steady state (benchlib.PERFTEST_STEADY); the
    # anchor streams 512 MiB after its warm-up messages.
    goal_run = "-n %d" % bw_n if args.quick else PERFTEST_STEADY
    anchor_mib = 32 if args.quick else 512
    rounds = args.rounds or (2 if args.quick else 5)
    nbw = args.bw_rounds or (2 if args.quick else 3)
    rows = []  # (test, size, min_us or None, median_us or None, MB/s or None)
    paired = {}  # test -> [(min, median)] per round, for the interleaved 8-byte runs
    rp_notes = []  # read-proxy requests per Read, from the target's counters
    ok = True
    t0 = time.monotonic()
    try:
        with Cluster(2, mem=args.mem) as c:
            print("cluster: 2 nodes of %d MiB ready in %.1f s" % (args.mem, time.monotonic() - t0))
            raw, raw_out = raw_anchors(c, args.quick)
            print(raw_out.rstrip())
            port = 18600
            # The latency goal compares two figures that swing 2-3x between runs in TCG
            # guests: measured in turns, so that both see the same machine.
            for r in range(rounds):
                paired.setdefault("raw put_pio", []).append(pio_pingpong(c, lat_n))
                for prog in ("ib_write_lat", "ib_send_lat"):
                    port += 1
                    paired.setdefault(prog, []).append(perftest_lat(c, prog, 8, lat_n, port))
                print("round %d: PIO put / ib_write_lat / ib_send_lat 8 B median %s us"
                      % (r + 1, " / ".join("%.1f" % paired[t][-1][1]
                                           for t in ("raw put_pio", "ib_write_lat",
                                                     "ib_send_lat"))), flush=True)
            for prog, size in (("ib_send_lat", 4096), ("ib_write_lat", 4096), ("ib_read_lat", 8),
                               ("ib_read_lat", 4096), ("ib_atomic_lat", 8)):
                port += 1
                rows.append((prog, size) + perftest_lat(c, prog, size, lat_n, port) + (None,))
            for prog, size in (("ib_write_bw", 65536), ("ib_send_bw", 65536),
                               ("ib_send_bw", 1048576), ("ib_read_bw", 65536)):
                port += 1
                if prog == "ib_read_bw":
                    mbs, delta = read_bw(c, "-n %d" % bw_n, size, port)
                    rp_notes.append(rp_note(size, delta))
                else:
                    mbs = bw_row(perftest(c, prog, "-n %d -s %d" % (bw_n, size), port), size)
                rows.append((prog, size, None, None, mbs))
            loaded_chain_max = chain_max(c, 1) if chain_values != [None] else None
            huge = reserve_huge_pages(c, HUGE_PAGES)
            try:
                rounds_bw, port = bw_rounds(c, nbw, goal_run, anchor_mib, chain_values, port,
                                            huge)
            finally:
                if loaded_chain_max is not None:
                    chain_max(c, 1, loaded_chain_max)
                if huge:
                    reserve_huge_pages(c, 0)
            counters = c.run(1, "cat /sys/class/peach2/peach2-0/verbs")[1]
            ok &= kernels_clean(c, range(2))
    except (ClusterError, RuntimeError, KeyError) as e:
        print("bench-verbs: %s" % e, file=sys.stderr)
        return 1

    # The 1 MiB bandwidths: each round's figure, and the median of the rounds' ratios. The
    # goal line's Read is the last --rp-chain-max value (by default the driver's setting).
    goal_chain = chain_values[-1]
    dma_1m = median([r["dma"] for r in rounds_bw])
    write_1m = median([r["write"] for r in rounds_bw])
    read_1m = {v: median([r["read"][v][0] for r in rounds_bw]) for v in chain_values}
    huge_1m = (median([r["write_huge"] for r in rounds_bw]) if "write_huge" in rounds_bw[0]
               else None)
    rows += [("ib_write_bw", 1048576, None, None, write_1m),
             ("ib_read_bw", 1048576, None, None, read_1m[goal_chain])]
    if huge_1m is not None:
        rows.append(("ib_write_bw huge", 1048576, None, None, huge_1m))
    for v in chain_values:
        delta = {k: sum(r["read"][v][1].get(k, 0) for r in rounds_bw)
                 for k in rounds_bw[0]["read"][v][1]}
        rp_notes.append(rp_note(1048576, delta)
                        + ("" if v is None else " [rp_chain_max %d]" % v))

    # The interleaved runs: the median of the rounds' medians, the least minimum.
    lat8 = {t: (min(m for m, _ in v), median([d for _, d in v])) for t, v in paired.items()}
    table = [("raw put_pio", 8) + lat8["raw put_pio"] + (None,),
             ("raw get", 8, None, raw["get_8"], None),
             ("raw dma_put", 1048576, None, None, dma_1m),
             ("raw get_stream", 1048576, None, None, raw["get_stream_1m"]),
             ("ib_send_lat", 8) + lat8["ib_send_lat"] + (None,),
             ("ib_write_lat", 8) + lat8["ib_write_lat"] + (None,)] + rows
    print("\n=== TCA Verbs (perftest) beside raw libtca, same run ===")
    print("(8-byte PIO put, ib_send_lat and ib_write_lat: %d interleaved rounds; median of the "
          "rounds' medians, least minimum)" % rounds)
    print("%-16s %9s %10s %12s %12s" % ("test", "size", "min us", "median us", "MB/s"))

    def cell(v, fmt):
        return fmt % v if v is not None else ""

    for test, size, lo, us, mbs in table:
        print("%-16s %9d %10s %12s %12s" % (test, size, cell(lo, "%.1f"), cell(us, "%.1f"),
                                            cell(mbs, "%.0f")))
    ratios = [s[1] / p[1] for s, p in zip(paired["ib_send_lat"], paired["raw put_pio"])]
    print("\nverbs: send 8 B / PIO put 8 B latency, per round: %s; median %.2f (goal <= 1.25; "
          "paper 000: 1.75); minima %.1f / %.1f us = %.2f"
          % (" ".join("%.2f" % x for x in ratios), median(ratios), lat8["ib_send_lat"][0],
             lat8["raw put_pio"][0], lat8["ib_send_lat"][0] / lat8["raw put_pio"][0]))
    print("(1 MiB bandwidths: %d interleaved rounds of DMA put, ib_write_bw, ib_read_bw; the "
          "table shows the medians, the goal lines each round's ratio and their median)" % nbw)
    write_ratios = [r["write"] / r["dma"] for r in rounds_bw]
    print("verbs: RDMA Write / DMA put bandwidth at 1 MiB, per round: %s; median %.2f "
          "(medians %.0f / %.0f MB/s; goal >= 0.90)"
          % (" ".join("%.2f" % x for x in write_ratios), median(write_ratios), write_1m, dma_1m))
    if huge_1m is not None:
        huge_ratios = [r["write_huge"] / r["dma"] for r in rounds_bw]
        print("verbs: RDMA Write from huge pages (perftest --use_hugepages) / DMA put at 1 MiB, "
              "per round: %s; median %.2f (median %.0f MB/s: the same library with few DMA "
              "descriptors per Write)"
              % (" ".join("%.2f" % x for x in huge_ratios), median(huge_ratios), huge_1m))
    for v in chain_values:
        read_ratios = [r["read"][v][0] / r["dma"] for r in rounds_bw]
        print("verbs: RDMA Read / DMA put bandwidth at 1 MiB%s, per round: %s; median %.2f "
              "(medians %.0f / %.0f MB/s%s)"
              % ("" if v is None else " (node 1 rp_chain_max %d)" % v,
                 " ".join("%.2f" % x for x in read_ratios), median(read_ratios), read_1m[v],
                 dma_1m, "; goal >= 0.80" if v == goal_chain else ""))
    print("\n" + "\n".join(rp_notes))
    print("\nnode1 counters:\n" + counters.rstrip())

    os.makedirs(os.path.dirname(csv_host), exist_ok=True)
    with open(csv_host, "w", encoding="utf-8") as f:
        f.write("test,size,median_us,mb_per_s,min_us\n")
        for test, size, lo, us, mbs in table:
            f.write("%s,%d,%s,%s,%s\n" % (test.replace(" ", "_"), size, cell(us, "%.3f"),
                                          cell(mbs, "%.1f"), cell(lo, "%.3f")))
    print("\nCSV written to %s" % csv_host)
    print("\nbench-verbs: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
