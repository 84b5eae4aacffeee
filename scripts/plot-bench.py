#!/usr/bin/python3
"""Draw the benchmark CSVs of `make bench` as charts (PNG and SVG, matplotlib), with the
PEACH2 papers' figures beside them as reference points.

    scripts/plot-bench.py                  # the CSVs in build/bench/ -> build/bench/<chart>.png/.svg
    scripts/plot-bench.py --dir DIR        # another directory
    scripts/plot-bench.py A.csv [B.csv..]  # one chart of these CSVs, next to the first

Input: the CSV every `tca_bench` test writes (test,mode,size,count,min_us,median_us,p99_us,
mb_per_s,verified; empty fields were not measured). A chart has a latency panel (median
against message size, log-log, p99 dashed; a test measured at one size is a point) and a
bandwidth panel (the streams' MB/s). A paper's figure that measures the same thing is drawn
as a dotted line of the series' colour, labelled with its source
(/work/shared/PEACH2-REFERENCE.md). `make bench` runs this last.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

plt.rcParams["svg.fonttype"] = "none"  # SVG text stays text (searchable, small)

# The charts of `make bench`: name, the CSVs (in build/bench/) and a title.
CHARTS = [
    ("pio", ["pio_pingpong.csv"], "PIO ping-pong between two nodes (tca_bench pingpong)"),
    ("dma", ["dma.csv", "dma_local.csv"], "DMA between two nodes, and on one (tca_bench dma, dma-local)"),
    ("get", ["get.csv"], "Read proxy: get and atomics beside put (tca_bench get)"),
    ("crossover", ["crossover.csv"], "Blocking put, PIO against DMA (tca_bench crossover)"),
]

# The papers' figures (PEACH2-REFERENCE.md): (panel, test, mode or None for any, value in µs
# or MB/s, label). Real PEACH2: PCIe Gen2 x8 hardware; ours: QEMU under TCG.
REFERENCES = [
    ("latency", "latency", "pio", 0.9, "paper 004: PIO min latency 0.9 µs"),
    ("latency", "put_pio", "pio", 0.9, "paper 004: PIO min latency 0.9 µs"),
    ("latency", "latency", "card", 2.0, "paper 000: DMA min latency, on-card descriptors 2.0 µs"),
    ("latency", "latency", "host", 2.2, "paper 000: DMA min latency, host descriptors 2.2 µs"),
    ("latency", "get", None, 6.5, "paper 000: RDMA Read min latency 6.5 µs"),
    ("latency", "cas", None, 6.5, "paper 000: atomic CAS/FAA 6.5 µs"),
    ("latency", "faa", None, 6.5, "paper 000: atomic CAS/FAA 6.5 µs"),
    ("bandwidth", "stream", None, 3500, "paper 004: DMA between nodes, max 3.5 GB/s"),
    ("bandwidth", "dma_put_stream", None, 3500, "paper 004: DMA between nodes, max 3.5 GB/s"),
    ("bandwidth", "get_stream", None, 3500, "paper 000: RDMA Read, max 3.5 GB/s"),
    ("bandwidth", "local", None, 3300, "paper 004: local DMA, 128 chained 4 KiB, 3.3 GB/s"),
]

NOTE = "emulated (QEMU, TCG): compare the shapes and ratios with the papers, not absolute values"


def size_label(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def load(paths):
    """{(panel, test, mode): [(size, median or MB/s, p99 or None)]} from the CSVs."""
    series = {}
    for path in paths:
        with open(path, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                size, mode = int(r["size"]), r.get("mode", "")
                if r["median_us"]:
                    key, y = ("latency", r["test"], mode), (float(r["median_us"]), float(r["p99_us"]))
                elif r["mb_per_s"]:
                    key, y = ("bandwidth", r["test"], mode), (float(r["mb_per_s"]), None)
                else:
                    continue  # the other side measured it
                series.setdefault(key, []).append((size,) + y)
    return series


def name_of(test, mode):
    return "%s %s" % (test, mode) if mode else test


def draw(series, title, out_base):
    """Writes out_base.png and out_base.svg; returns their paths."""
    panels = [p for p in ("latency", "bandwidth") if any(k[0] == p for k in series)]
    if not panels:
        raise ValueError("no measured rows")
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 5.2), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, panel in zip(axes[0], panels):
        keys = sorted(k for k in series if k[0] == panel)
        drawn = set()
        for i, key in enumerate(keys):
            c = colours[i % len(colours)]
            pts = sorted(series[key])
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            label = name_of(key[1], key[2])
            if len(pts) == 1:
                ax.plot(xs, ys, "o", color=c, markersize=7,
                        label="%s, %s: %.4g" % (label, size_label(xs[0]), ys[0]))
            else:
                ax.plot(xs, ys, "-o", color=c, markersize=3, label=label + (" median" if panel == "latency" else ""))
                if panel == "latency":
                    ax.plot(xs, [p[2] for p in pts], "--", color=c, linewidth=0.8, label=label + " p99")
            for rp, rtest, rmode, value, rlabel in REFERENCES:
                if rp == panel and rtest == key[1] and rmode in (None, key[2]) and rlabel not in drawn:
                    drawn.add(rlabel)
                    ax.axhline(value, color=c, linestyle=":", linewidth=1.2, label=rlabel)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(ticker.LogLocator(base=4))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(
            lambda v, _: size_label(int(v)) if v >= 1 and v == int(v) else ""))
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("latency, µs (median; p99 dashed)" if panel == "latency" else "bandwidth, MB/s")
        ax.set_title(panel)
        ax.grid(True, which="major", color="#dddddd")
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(title)
    fig.text(0.5, 0.01, NOTE, ha="center", fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    paths = []
    for ext in ("png", "svg"):
        paths.append("%s.%s" % (out_base, ext))
        fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="*", help="CSVs for one chart (default: every chart of --dir)")
    build = os.environ.get("PEACH2_BUILD") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build")
    ap.add_argument("--dir", default=os.path.normpath(os.path.join(build, "bench")),
                    help="where `make bench` left its CSVs (default $PEACH2_BUILD/bench, build/bench)")
    args = ap.parse_args()
    if args.csv:
        missing = [p for p in args.csv if not os.path.exists(p)]
        if missing:
            print("plot-bench: %s not found" % ", ".join(missing), file=sys.stderr)
            return 1
        jobs = [(os.path.splitext(args.csv[0])[0], args.csv, os.path.basename(args.csv[0]))]
    else:
        jobs = []
        for name, files, title in CHARTS:
            paths = [os.path.join(args.dir, f) for f in files if os.path.exists(os.path.join(args.dir, f))]
            if paths:
                jobs.append((os.path.join(args.dir, name), paths, title))
        if not jobs:
            print("plot-bench: no benchmark CSV in %s (run make bench first)" % args.dir, file=sys.stderr)
            return 1
    for base, paths, title in jobs:
        try:
            written = draw(load(paths), title, base)
        except (ValueError, KeyError) as e:
            print("plot-bench: %s: %s" % (", ".join(paths), e), file=sys.stderr)
            return 1
        print("plot-bench: wrote %s" % " and ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
