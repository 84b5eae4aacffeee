#!/usr/bin/python3
"""Chart what peach2-model predicts for real PEACH2 beside the papers' figures.

    scripts/plot-model.py [--model build/model/peach2-model] [--out build/bench/model]
                          [--measured build/bench/model-summary-dma.csv ...]

Draws one-way latency and bandwidth by message size (log scales): the model's curves for
PIO, DMA (on-card descriptors, host descriptors, register mode) and the read-proxy get
(`peach2-model --curves`, default profile), and the papers' figures as points
(`peach2-model --calibration --csv`, the rows with a size). With --measured (the CSVs that
`make bench` writes from its own traced runs, `peach2-model --summary-csv`: op, mode, bytes,
predicted and emulated times) the fastest predicted operation of each kind and size in
those runs is drawn as a square. Writes OUT.svg and OUT.png; `make bench` draws build/bench/model.svg after the
benchmarks.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("PEACH2_BUILD", os.path.join(HERE, "..", "build"))

# Curve name from --curves -> (colour, figure op, figure mode)
SERIES = {
    "PIO": ("#1f77b4", "PIO put", "-"),
    "DMA on-card": ("#d62728", "DMA run", "on-card"),
    "DMA host": ("#2ca02c", "DMA run", "host"),
    "DMA register": ("#9467bd", "DMA run", "register"),
    "get": ("#ff7f0e", "get", "-"),
}


def run_csv(cmd):
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("plot-model: %s failed: %s (build it with `make model`)" % (" ".join(cmd), e))
    return list(csv.DictReader(io.StringIO(out)))


def size_label(n, _pos=None):
    n = int(n)
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def colour_of(op, mode):
    if op == "atomic":  # CAS and FAA: read-proxy requests, as get
        op = "get"
    for colour, fop, fmode in SERIES.values():
        if fop == op and (fmode == mode or op != "DMA run"):
            return colour
    return "#555555"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(BUILD, "model", "peach2-model"))
    ap.add_argument("--out", default=os.path.join(BUILD, "bench", "model"))
    ap.add_argument("--measured", action="append", default=[],
                    help="summary CSV of a traced benchmark run (repeatable; missing ones "
                    "are skipped)")
    args = ap.parse_args()

    figures = run_csv([args.model, "--calibration", "--csv"])
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(13, 5.6))

    # The default profile (2015 logic, paper 000) for every operation; the 2013
    # logic's register mode (paper 004) dashed, for 004's register-mode points.
    for profile, style, names in ((None, "-", list(SERIES)), ("2013", "--", ["DMA register"])):
        cmd = [args.model, "--curves"] + (["--profile", profile] if profile else [])
        curves = run_csv(cmd)
        for name in names:
            colour = SERIES[name][0]
            pts = [r for r in curves if r["series"] == name]
            x = [int(r["bytes"]) for r in pts]
            label = "model: %s%s" % (name, " (2013 logic)" if profile else "")
            lat.plot(x, [float(r["latency_us"]) for r in pts], style, color=colour, label=label)
            bw.plot(x, [float(r["gbps"]) for r in pts], style, color=colour, label=label)

    # The papers' figures that are a size and a value, once each (both profiles
    # check the PIO figure; CAS and FAA share get's 6.5 µs).
    points = {}
    for f in figures:
        size = int(f["bytes"])
        if size == 0 or f["metric"] not in ("latency", "bandwidth"):
            continue
        key = (f["metric"], size, f["paper"], f["op"] if f["op"] != "atomic" else "get")
        points.setdefault(key, f)
    stagger = {}
    for (metric, size, text, _), f in sorted(points.items()):
        axis = lat if metric == "latency" else bw
        colour = colour_of(f["op"], f["mode"])
        value = float(f["paper_value"])
        marker = "v" if text.startswith("<") else "o"
        axis.plot([size], [value], marker, color=colour, markersize=9, markerfacecolor="none",
                  markeredgewidth=2)
        n = stagger.get((metric, size), 0)
        stagger[(metric, size)] = n + 1
        axis.annotate("%s %s (paper %s)" % (text, f["unit"].replace("us", "µs"),
                                            f["source"].split()[0]),
                      (size, value), textcoords="offset points", xytext=(10, -14 + 11 * n),
                      fontsize=7, color=colour)

    measured = [m for m in args.measured if os.path.exists(m)]
    for path in measured:
        with open(path, encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                # The fastest of a kind and size: in a stream (operations in
                # flight) the median includes queueing behind the others.
                size, t = int(r["bytes"]), float(r["predicted_min_us"])
                if size <= 0 or t <= 0:
                    continue
                colour = colour_of(r["op"], r["mode"])
                lat.plot([size], [t], "s", color=colour, markersize=5, alpha=0.7)
                bw.plot([size], [size / 1e3 / t], "s", color=colour, markersize=5, alpha=0.7)

    lat.set_title("One-way latency on PEACH2: model (lines), papers (circles)")
    lat.set_ylabel("µs")
    bw.set_title("Bandwidth (size / one-way latency)")
    bw.set_ylabel("GB/s")
    bw.axhline(3.66, color="#999999", linestyle=":", linewidth=1)
    bw.annotate("link peak 3.66 GB/s (004)", (8, 3.66), textcoords="offset points",
                xytext=(2, 3), fontsize=7, color="#777777")
    for axis in (lat, bw):
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
        axis.set_xlabel("message size")
        axis.grid(True, which="both", alpha=0.25)
        axis.tick_params(axis="x", labelrotation=45, labelsize=7)
    lat.set_yscale("log")
    lat.legend(fontsize=7, loc="upper left")
    if measured:
        fig.text(0.5, 0.005, "squares: this run's traced benchmarks, the fastest predicted "
                 "operation of each kind and size",
                 ha="center", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for ext in ("svg", "png"):
        fig.savefig("%s.%s" % (args.out, ext), dpi=110)
    print("plot-model: wrote %s.svg and %s.png" % (args.out, args.out))


if __name__ == "__main__":
    main()
