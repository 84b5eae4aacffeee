#!/usr/bin/python3
"""Draw benchmark CSVs as SVG line charts (no dependencies beyond Python's stdlib).

    scripts/plot-bench.py                       # build/bench/get.csv -> build/bench/get.svg
    scripts/plot-bench.py IN.csv OUT.svg

Input: the CSV that `tca_bench get` writes (columns test,mode,size,count,min_us,median_us,
p99_us,mb_per_s,verified). Drawn: median latency against message size for every test with more than one
size (log-log axes), p99 as a dashed line of the same colour, and single-size tests (the
8-byte PIO put, CAS, FAA) as labelled points. Bandwidth-only rows (streams) are listed in
the caption. `make bench` calls it after bench-get.py.
"""
import csv
import math
import os
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
W, H = 820, 470
LEFT, RIGHT, TOP, BOTTOM = 70, 230, 40, 90


def size_label(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def load(path):
    series, points, streams = {}, [], []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            size = int(r["size"])
            if not r["median_us"]:
                if r["mb_per_s"]:
                    streams.append("%s %s: %s MB/s" % (r["test"], size_label(size), r["mb_per_s"]))
                continue
            series.setdefault(r["test"], []).append((size, float(r["median_us"]), float(r["p99_us"])))
    for name in [n for n, v in series.items() if len(v) == 1]:
        size, med, _ = series.pop(name)[0]
        points.append((name, size, med))
    return series, points, streams


def svg(series, points, streams, title):
    xs = [s for v in series.values() for s, _, _ in v] + [s for _, s, _ in points]
    ys = [y for v in series.values() for _, m, p in v for y in (m, p)] + [m for _, _, m in points]
    if not xs:
        raise SystemExit("plot-bench: no latency rows to draw")
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    y0 = math.floor(math.log10(min(ys)))
    y1 = math.ceil(math.log10(max(ys)))
    x1 = max(x1, x0 + 1)
    y1 = max(y1, y0 + 1)

    def px(x):
        return LEFT + (math.log2(x) - x0) / (x1 - x0) * (W - LEFT - RIGHT)

    def py(y):
        return H - BOTTOM - (math.log10(y) - y0) / (y1 - y0) * (H - TOP - BOTTOM)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (LEFT, title)]
    # Axes and grid: one line per power of ten (µs) and per power of four (bytes).
    for e in range(int(y0), int(y1) + 1):
        y = py(10 ** e)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (LEFT, W - RIGHT, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g µs</text>' % (LEFT - 6, y + 4, 10 ** e))
    e = math.ceil(x0)
    while e <= x1:
        x = px(2 ** e)
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>' % (x, x, TOP, H - BOTTOM))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (x, H - BOTTOM + 16, size_label(2 ** e)))
        e += 2
    out.append('<text x="%d" y="%d" text-anchor="middle">message size</text>'
               % ((LEFT + W - RIGHT) // 2, H - BOTTOM + 34))
    for i, (name, rows) in enumerate(sorted(series.items())):
        c = COLOURS[i % len(COLOURS)]
        rows.sort()
        med = " ".join("%.1f,%.1f" % (px(s), py(m)) for s, m, _ in rows)
        p99 = " ".join("%.1f,%.1f" % (px(s), py(p)) for s, _, p in rows)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, med))
        out.append('<polyline fill="none" stroke="%s" stroke-dasharray="4 3" points="%s"/>' % (c, p99))
        ly = TOP + 16 * i
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   % (W - RIGHT + 12, W - RIGHT + 32, ly, ly, c))
        out.append('<text x="%d" y="%d">%s median (dashed: p99)</text>' % (W - RIGHT + 36, ly + 4, name))
    # Single-size tests: a dot on the chart, named in the legend (not next to the
    # dot: they share one size and would overlap).
    for j, (name, size, med) in enumerate(points):
        c = COLOURS[(len(series) + j) % len(COLOURS)]
        out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (px(size), py(med), c))
        ly = TOP + 16 * (len(series) + j)
        out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (W - RIGHT + 22, ly, c))
        out.append('<text x="%d" y="%d">%s %s: %.0f µs</text>'
                   % (W - RIGHT + 36, ly + 4, name, size_label(size), med))
    for k, line in enumerate(streams):
        out.append('<text x="%d" y="%d" fill="#444">%s</text>' % (LEFT, H - 8 - 14 * (len(streams) - 1 - k), line))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "bench", "get.csv")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.splitext(src)[0] + ".svg"
    if not os.path.exists(src):
        print("plot-bench: %s not found (run scripts/bench-get.py first)" % src, file=sys.stderr)
        return 1
    series, points, streams = load(src)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(svg(series, points, streams, "PEACH2 emulation: latency by message size (%s)"
                    % os.path.basename(src)))
    print("plot-bench: wrote %s" % dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
