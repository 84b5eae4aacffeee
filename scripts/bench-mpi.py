#!/usr/bin/python3
"""Boot two nodes and time MPI ping-pong for Open MPI and MPICH over the cards (UCX over
TCA Verbs) and over the management network (UCX over TCP), beside Debian's perftest
(Verbs Send/Recv latency, RDMA Write bandwidth), all from one run; print the table and
the goals of issue 12.

    scripts/bench-mpi.py            # make bench
    scripts/bench-mpi.py --quick    # fewer iterations and sizes, for a smoke run

MPI figures come from userlib/mpi/mpi_pingpong (one rank per node): latency = half the
round trip, 1 B .. 4 KiB, its median and its mean; bandwidth = a stream of 64
non-blocking sends per window (OSU's osu_bw window), up to 4 MiB. Writes build/bench/mpi.csv
(mpi,transport,size,lat_us,med_us,stream_mb_per_s).

Like is compared with like: MPI's median with perftest's t_typical (a median), MPI's mean
with t_avg; the goals take the medians (a descheduled round trip in an emulated cluster
moves a mean by more than the transport does). Over the cards every size gets 2000 round
trips (10 % more untimed first) and 64 messages of 4 MiB in the table's stream (after
the timed round trips), 200 in a round's; the reference is ib_write_bw's steady state
(perftest's duration mode, WRITE_BW_RUN: 200 messages timed from the first one read ~30 %
lower, 9.7-10.7 against 13.3-13.6 GB/s in one cluster), and the MPI stream must not be
too short either (20 messages of 4 MiB, 8 ms, two windows of 16 each starting with a
rendezvous and ending in a drain: 6 300-9 500 MB/s where 200 at a window of 64 made
11 000-13 400 in the same cluster); over TCP, ~100x slower, 200 and 16 MiB per size.

Goals (issue 12), reported, not asserted: MPI 8 B latency <= 1.3 x Verbs Send/Recv 8 B
latency (paper 000: 3.6 / 3.5 us) and <= 0.25 x the same MPI over TCP; MPI bandwidth at
4 MiB >= 80 % of RDMA Write bandwidth.

One measurement of each is not enough to judge a ratio: in one cluster the median of the
same 8 B ping-pong moves by 30-60 % from run to run (5.6-9.2 us for MPICH in four runs of
one minute), and the RDMA Write stream with the state of the guests' memory. So after the
tables the goal figures are measured again in ROUNDS rounds (default 5): each round runs
ib_send_lat 8 B, ib_write_bw 4 MiB and both MPIs' 8 B ping-pong and 4 MiB stream, in an
order reversed every other round, and the goals are judged on the median of the rounds'
ratios (each ratio from one round, its two figures measured a few seconds apart); every
round is printed and written to mpi-rounds.csv (round,what,value).
"""
import argparse
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (PERFTEST_STEADY, add_mem_argument, bench_csv, kernels_clean,  # noqa: E402
                      launch_report, perftest_pair)
from cluster import Cluster, ClusterError  # noqa: E402

LAUNCH = {"openmpi": "mpirun -np 2 %s mpi_pingpong.openmpi",
          "mpich": "mpiexec.mpich -n 2 %s mpi_pingpong.mpich"}
# The management network through the same UCX (only the transport differs). Open MPI's
# pml ucx takes only RDMA devices unless told otherwise (pml_ucx_tls, pml_ucx_devices).
TCP_ENV = {"openmpi": "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0 "
                      "--mca pml_ucx_tls any --mca pml_ucx_devices any",
           "mpich": "-genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0"}


def pingpong(c, mpi, transport, args):
    """{size: (mean us, median us, stream MB/s)} from one mpi_pingpong run."""
    cmd = LAUNCH[mpi] % (TCP_ENV[mpi] if transport == "tcp" else "") + " " + args
    rc, out = c.run(0, cmd + " 2>&1", timeout=3600)
    if rc != 0 or "mpi_pingpong: OK" not in out:
        raise RuntimeError("%s failed (rc %d):\n%s" % (cmd, rc, out))
    rows = {}
    for m in re.finditer(r"^\s*(\d+)\s+\d+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+(?:\s+([\d.]+))?\s*$",
                         out, re.M):
        rows[int(m.group(1))] = (float(m.group(2)), float(m.group(3)),
                                 float(m.group(4)) if m.group(4) else None)
    return rows


def perftest(c, prog, args, port, column):
    rc_s, out_s, rc_c, out_c = perftest_pair(c, 1, 0, "%s %s" % (prog, args), port, 1800)
    if rc_s or rc_c:
        raise RuntimeError("%s %s failed:\n%s\n%s" % (prog, args, out_s, out_c))
    size = int(re.search(r"-s (\d+)", args).group(1))
    m = re.search(r"^\s*%d\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % size, out_c, re.M)
    if not m:
        raise RuntimeError("no result row in:\n" + out_c)
    if column == "lat":  # (t_typical, t_avg): columns 5 and 6
        m = re.search(r"^\s*%d\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)" % size,
                      out_c, re.M)
        if not m:
            raise RuntimeError("no t_typical/t_avg in:\n" + out_c)
        return float(m.group(1)), float(m.group(2))
    # bandwidth: BW average in 2^20 B/s (column 4)
    return float(m.group(2)) * 1048576 / 1e6


# ib_write_bw at 4 MiB, its steady state.
WRITE_BW_RUN = PERFTEST_STEADY + " -s 4194304"
# mpi_pingpong's stream: 64 sends in flight, as osu_bw keeps them.
STREAM = "-b -W 64"
# A round's 4 MiB figures: 20 timed round trips, then a stream of 200 messages (~0.1 s).
ROUND_4MIB = STREAM + " -S 200 -i 20 -B 256M -m 4M -M 4M"

# What one round measures: name -> function(cluster, port) returning one figure.
ROUND_STEPS = {
    "ib_send_lat_8B_us": lambda c, port: perftest(c, "ib_send_lat", "-n 2000 -s 8", port,
                                                  "lat")[0],
    "ib_write_bw_4MiB_MBps": lambda c, port: perftest(c, "ib_write_bw", WRITE_BW_RUN, port,
                                                      "bw"),
    "openmpi_8B_us": lambda c, port: pingpong(c, "openmpi", "tca",
                                              "-i 2000 -m 8 -M 8")[8][1],
    "mpich_8B_us": lambda c, port: pingpong(c, "mpich", "tca", "-i 2000 -m 8 -M 8")[8][1],
    "openmpi_4MiB_MBps": lambda c, port: pingpong(c, "openmpi", "tca",
                                                  ROUND_4MIB)[4194304][2],
    "mpich_4MiB_MBps": lambda c, port: pingpong(c, "mpich", "tca", ROUND_4MIB)[4194304][2],
}


def goal_rounds(c, n):
    """Run ROUND_STEPS n times (order reversed every other round); [{step: figure}]."""
    rounds = []
    for r in range(n):
        steps = list(ROUND_STEPS) if r % 2 == 0 else list(ROUND_STEPS)[::-1]
        figures = {}
        for k, step in enumerate(steps):
            figures[step] = ROUND_STEPS[step](c, 18710 + 10 * r + k)
        rounds.append(figures)
        print("round %d/%d: %s" % (r + 1, n, ", ".join(
            "%s %.1f" % (k, figures[k]) for k in ROUND_STEPS)), flush=True)
    return rounds


def judge(rounds, name, num, den, goal, at_most):
    """Print a goal line from the rounds' ratios num/den; True if the median meets it."""
    ratios = sorted(r[num] / r[den] for r in rounds)
    med = statistics.median(ratios)
    met = med <= goal if at_most else med >= goal
    print("  %-34s median %.2f (rounds %s) goal %s %.2f: %s"
          % (name, med, " ".join("%.2f" % x for x in ratios), "<=" if at_most else ">=",
             goal, "met" if met else "NOT met"))
    return met


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    add_mem_argument(ap)
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds of the goal figures (default 5, --quick 2)")
    a = ap.parse_args()
    nrounds = a.rounds if a.rounds is not None else (2 if a.quick else 5)
    csv_host = a.csv or bench_csv("mpi.csv")
    args = {"tca": "%s -i %d -B %s" % ((STREAM,) + ((200, "64M") if a.quick else (2000, "256M"))),
            "tcp": "%s -i %d -B %s" % ((STREAM,) + ((20, "8M") if a.quick else (200, "16M")))}
    results = {}
    t0 = time.monotonic()
    try:
        with Cluster(2, mem=a.mem) as c:
            print("cluster: 2 nodes of %d MiB ready in %.1f s; load: %s"
                  % (a.mem, time.monotonic() - t0, open("/proc/loadavg").read().split()[:3]))
            n = 200 if a.quick else 2000
            send8 = perftest(c, "ib_send_lat", "-n %d -s 8" % n, 18700, "lat")
            write4m = perftest(c, "ib_write_bw", WRITE_BW_RUN, 18701, "bw")
            try:
                for mpi in ("openmpi", "mpich"):
                    for transport in ("tca", "tcp"):
                        print("%s over %s ..." % (mpi, transport), flush=True)
                        results[mpi, transport] = pingpong(c, mpi, transport, args[transport])
                print("goal figures, %d rounds ..." % nrounds, flush=True)
                rounds = goal_rounds(c, nrounds)
            except RuntimeError as e:
                raise RuntimeError("%s\n%s" % (e, launch_report(c, range(2)))) from e
            ok = kernels_clean(c, range(2))
    except (ClusterError, RuntimeError) as e:
        print("bench-mpi: %s" % e, file=sys.stderr)
        return 1

    sizes = sorted(results["openmpi", "tca"])
    print("\n=== MPI ping-pong, one rank per node: latency us (half round trip: median, "
          "mean) / stream MB/s ===")
    cols = [(m, t) for m in ("openmpi", "mpich") for t in ("tca", "tcp")]
    print("%9s " % "bytes" + " ".join("%29s" % ("%s/%s" % k) for k in cols))
    for s in sizes:
        print("%9d " % s + " ".join("%9.1f %9.1f %9.1f" % tuple(
            results[k][s][i] for i in (1, 0, 2)) if s in results[k] else "%29s" % "-"
            for k in cols))
    send8, send8_avg = send8
    print("\nverbs (perftest, same run): ib_send_lat 8 B t_typical %.1f us (t_avg %.1f), "
          "ib_write_bw 4 MiB %.0f MB/s" % (send8, send8_avg, write4m))
    for mpi in ("openmpi", "mpich"):
        mean, med, _ = results[mpi, "tca"][8]
        tcp = results[mpi, "tcp"][8][1]
        bw = results[mpi, "tca"][max(sizes)][2]
        print("%s (the tables' run): 8 B latency / Verbs send: median %.1f / %.1f us = %.2f "
              "(goal <= 1.3; means %.1f / %.1f = %.2f); / over TCP (medians): %.1f us = %.2f "
              "(goal <= 0.25); "
              "4 MiB stream / RDMA Write: %.0f / %.0f MB/s = %.2f (goal >= 0.80)"
              % (mpi, med, send8, med / send8, mean, send8_avg, mean / send8_avg, tcp,
                 med / tcp, bw, write4m, bw / write4m))
    os.makedirs(os.path.dirname(csv_host), exist_ok=True)
    if rounds:
        print("\ngoals on %d rounds (each ratio from one round; median of the rounds):"
              % len(rounds))
        met = []
        for mpi in ("openmpi", "mpich"):
            print(mpi + ":")
            met.append(judge(rounds, "8 B latency / ib_send_lat", mpi + "_8B_us",
                             "ib_send_lat_8B_us", 1.3, True))
            met.append(judge(rounds, "4 MiB stream / ib_write_bw", mpi + "_4MiB_MBps",
                             "ib_write_bw_4MiB_MBps", 0.80, False))
        # Reported, not asserted (as bench-verbs): figures of TCG guests swing.
        print("goals met on the rounds: %d of %d" % (sum(met), len(met)))
        with open(os.path.join(os.path.dirname(csv_host), "mpi-rounds.csv"), "w",
                  encoding="utf-8") as f:
            f.write("round,what,value\n")
            for r, figures in enumerate(rounds):
                for k in ROUND_STEPS:
                    f.write("%d,%s,%.3f\n" % (r + 1, k, figures[k]))
    with open(csv_host, "w", encoding="utf-8") as f:
        f.write("mpi,transport,size,lat_us,med_us,stream_mb_per_s\n")
        f.write("verbs,ib_send_lat,8,%.3f,%.3f,\nverbs,ib_write_bw,4194304,,,%.1f\n"
                % (send8_avg, send8, write4m))
        for (mpi, transport), rows in sorted(results.items()):
            for s, (mean, med, bw) in sorted(rows.items()):
                f.write("%s,%s,%d,%.3f,%.3f,%.1f\n" % (mpi, transport, s, mean, med, bw))
    print("\nCSV written to %s\nbench-mpi: %s" % (csv_host, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
