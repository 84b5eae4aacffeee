#!/usr/bin/python3
"""Boot two nodes and measure TCA Verbs with Debian's perftest, beside libtca's raw
PIO put, DMA put and get from the same run; print the table and the goals.

    scripts/bench-verbs.py            # make bench (after the libtca benchmarks)
    scripts/bench-verbs.py --quick    # fewer iterations, for a smoke run

Raw anchors (tca_bench get, node 1 serving): PIO put 8 B one-way latency, DMA put
stream at 1 MiB, get 8 B latency and get stream at 1 MiB. Verbs (perftest, node 1 the
server): ib_send_lat, ib_write_lat (one-way = RTT/2, as perftest reports), ib_read_lat,
ib_atomic_lat (round trips), at 8 B and 4 KiB; ib_write_bw, ib_send_bw, ib_read_bw at
64 KiB and 1 MiB. Writes build/bench/verbs.csv (test,size,median_us,mb_per_s).

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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import bench_csv, kernels_clean, tcp_pair  # noqa: E402
from cluster import Cluster, ClusterError  # noqa: E402


def perftest(c, prog, args, port, timeout=1800):
    """Server on node 1, client on node 0: the client's output (its result rows)."""
    rc_s, out_s, rc_c, out_c = tcp_pair(c, 1, 0, "%s %s" % (prog, args), port, timeout)
    if rc_s or rc_c:
        raise RuntimeError("%s %s failed (server %d, client %d):\n--- server\n%s\n--- client\n%s"
                           % (prog, args, rc_s, rc_c, out_s, out_c))
    return out_c


def lat_row(out, size):
    """perftest latency row: t_typical (median) in us."""
    m = re.search(r"^\s*%d\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % size, out, re.M)
    if not m:
        raise RuntimeError("no result row for %d B:\n%s" % (size, out))
    return float(m.group(3))


def bw_row(out, size):
    """perftest bandwidth row: BW average in MB/s (perftest's MB is 2^20 bytes)."""
    m = re.search(r"^\s*%d\s+\d+\s+([\d.]+)\s+([\d.]+)" % size, out, re.M)
    if not m:
        raise RuntimeError("no result row for %d B:\n%s" % (size, out))
    return float(m.group(2)) * 1048576 / 1e6


def raw_anchors(c, quick):
    """libtca's raw figures (tca_bench get, node 0 measuring, node 1 serving), from the
    CSV node 0 writes (test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified)."""
    bench = ("--iters 30 --latency-bytes 4M --stream-bytes 32M" if quick
             else "--iters 300 --latency-bytes 32M --stream-bytes 128M")
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

    return {"put_pio_8": med("put_pio", 8), "dma_put_1m": mbs("dma_put_stream", 1048576),
            "get_8": med("get", 8), "get_stream_1m": mbs("get_stream", 1048576)}, out0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--csv", default=None, help="where to write the CSV")
    args = ap.parse_args()
    csv_host = args.csv or bench_csv("verbs.csv")
    lat_n = 200 if args.quick else 2000
    bw_n = 50 if args.quick else 500
    rows = []  # (test, size, median_us or None, MB/s or None)
    ok = True
    t0 = time.monotonic()
    try:
        with Cluster(2) as c:
            print("cluster: 2 nodes ready in %.1f s" % (time.monotonic() - t0))
            raw, raw_out = raw_anchors(c, args.quick)
            print(raw_out.rstrip())
            port = 18600
            for prog in ("ib_send_lat", "ib_write_lat", "ib_read_lat"):
                for size in (8, 4096):
                    port += 1
                    out = perftest(c, prog, "-n %d -s %d" % (lat_n, size), port)
                    rows.append((prog, size, lat_row(out, size), None))
            port += 1
            out = perftest(c, "ib_atomic_lat", "-n %d" % lat_n, port)
            rows.append(("ib_atomic_lat", 8, lat_row(out, 8), None))
            for prog in ("ib_write_bw", "ib_send_bw", "ib_read_bw"):
                for size in (65536, 1048576):
                    port += 1
                    out = perftest(c, prog, "-n %d -s %d" % (bw_n, size), port)
                    rows.append((prog, size, None, bw_row(out, size)))
            counters = c.run(1, "cat /sys/class/peach2/peach2-0/verbs")[1]
            ok &= kernels_clean(c, range(2))
    except (ClusterError, RuntimeError, KeyError) as e:
        print("bench-verbs: %s" % e, file=sys.stderr)
        return 1

    print("\n=== TCA Verbs (perftest) beside raw libtca, same run ===")
    print("%-16s %9s %12s %12s" % ("test", "size", "median us", "MB/s"))
    for name, value, unit in (("raw put_pio", raw["put_pio_8"], "us"),
                              ("raw get", raw["get_8"], "us")):
        print("%-16s %9d %12.1f %12s" % (name, 8, value, ""))
    print("%-16s %9d %12s %12.0f" % ("raw dma_put", 1048576, "", raw["dma_put_1m"]))
    print("%-16s %9d %12s %12.0f" % ("raw get_stream", 1048576, "", raw["get_stream_1m"]))
    for test, size, us, mbs in rows:
        print("%-16s %9d %12s %12s" % (test, size, "%.1f" % us if us is not None else "",
                                          "%.0f" % mbs if mbs is not None else ""))
    get = {(t, s): (u, m) for t, s, u, m in rows}
    send8 = get[("ib_send_lat", 8)][0]
    write_bw = get[("ib_write_bw", 1048576)][1]
    read_bw = get[("ib_read_bw", 1048576)][1]
    print("\nverbs: send 8 B / PIO put 8 B latency: %.1f / %.1f us = %.2f (goal <= 1.25; paper 000: 1.75)"
          % (send8, raw["put_pio_8"], send8 / raw["put_pio_8"]))
    print("verbs: RDMA Write / DMA put bandwidth at 1 MiB: %.0f / %.0f MB/s = %.2f (goal >= 0.90)"
          % (write_bw, raw["dma_put_1m"], write_bw / raw["dma_put_1m"]))
    print("verbs: RDMA Read / DMA put bandwidth at 1 MiB: %.0f / %.0f MB/s = %.2f (goal >= 0.80)"
          % (read_bw, raw["dma_put_1m"], read_bw / raw["dma_put_1m"]))
    print("\nnode1 counters:\n" + counters.rstrip())

    os.makedirs(os.path.dirname(csv_host), exist_ok=True)
    with open(csv_host, "w", encoding="utf-8") as f:
        f.write("test,size,median_us,mb_per_s\n")
        f.write("raw_put_pio,8,%.3f,\n" % raw["put_pio_8"])
        f.write("raw_get,8,%.3f,\n" % raw["get_8"])
        f.write("raw_dma_put_stream,1048576,,%.1f\n" % raw["dma_put_1m"])
        f.write("raw_get_stream,1048576,,%.1f\n" % raw["get_stream_1m"])
        for test, size, us, mbs in rows:
            f.write("%s,%d,%s,%s\n" % (test, size, "%.3f" % us if us is not None else "",
                                       "%.1f" % mbs if mbs is not None else ""))
    print("\nCSV written to %s" % csv_host)
    print("\nbench-verbs: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
