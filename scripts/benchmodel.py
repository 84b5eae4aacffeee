"""Measured / predicted / paper: what `make bench` prints beside each `tca_bench dma` row.

The benchmark runs on a traced cluster (Cluster(trace=DIR), docs/trace-format.md);
peach2-model replays the traces (docs/timing-model.md) and this module finds each
benchmark message among the model's operations and sets three figures side by side:
the emulated wall clock (what tca_bench measured under QEMU), the model's prediction for
real PEACH2 cards, and the papers' figure where one exists (from `peach2-model
--calibration --csv`, the one table of them).

How messages are found: tca_bench dma runs, per mode, a ping-pong at every size and then
a stream at every size (userlib/tools/bench/puts.cpp); node 0 pings. Its operations to
node 1 in the model's list (--ops-csv, in recorded order) are therefore, per mode and
size, warmup + timed latency messages, then the stream's messages. A DMA message is one
run (payload and completion word); a PIO message two puts (payload, then the word).
"""
import csv
import io
import os
import statistics
import subprocess

from cluster import build_dir

MODEL_MODE = {"reg": "register", "card": "on-card", "host": "host", "pio": "-"}


def model_tool():
    return os.path.join(build_dir(), "model", "peach2-model")


def latency_iters(size, iters, budget, min_iters):
    """As tca_bench's latency_iters (userlib/tools/bench/protocol.cpp)."""
    by_budget = budget // size if size else iters
    return max(min(iters, by_budget), min(iters, min_iters))


def stream_messages(size, budget):
    """As tca_bench's stream_messages."""
    return min(max(budget // size if size else 16, 16), 4096)


class Params:
    """The tca_bench dma parameters the run used (its defaults unless given)."""

    def __init__(self, modes=("reg", "card", "host", "pio"), sizes=None, iters=200, warmup=5,
                 min_iters=5, latency_bytes=32 << 20, stream_bytes=128 << 20, stream_min=4096,
                 pio_max=65536, no_stream=False):
        self.modes = list(modes)
        self.sizes = sizes or [4 << (2 * k) for k in range(12) if 4 << (2 * k) <= 8 << 20]
        self.iters, self.warmup, self.min_iters = iters, warmup, min_iters
        self.latency_bytes, self.stream_bytes = latency_bytes, stream_bytes
        self.stream_min, self.pio_max, self.no_stream = stream_min, pio_max, no_stream

    def args(self):
        """The tca_bench dma arguments that give these parameters."""
        return ("--modes %s --sizes %s --iters %d --warmup %d --min-iters %d --latency-bytes %d "
                "--stream-bytes %d --stream-min %d --pio-max %d%s"
                % (",".join(self.modes), ",".join(str(s) for s in self.sizes), self.iters,
                   self.warmup, self.min_iters, self.latency_bytes, self.stream_bytes,
                   self.stream_min, self.pio_max, " --no-stream" if self.no_stream else ""))

    def latency_sizes(self, mode):
        return [s for s in self.sizes if mode != "pio" or s <= self.pio_max]

    def stream_sizes(self, mode):
        if self.no_stream or mode == "pio":
            return []
        return [s for s in self.sizes if s >= self.stream_min and s % 8 == 0]


def run_model(trace_dir, out_dir):
    """Replay the traces; (report text, operations). Raises RuntimeError on failure."""
    ops_csv = os.path.join(out_dir, "model_ops.csv")
    r = subprocess.run([model_tool(), trace_dir, "--ops-csv", ops_csv],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("peach2-model %s failed:\n%s" % (trace_dir, r.stdout))
    with open(ops_csv, newline="") as f:
        return r.stdout, list(csv.DictReader(f))


def paper_figures():
    """{(op, model mode, bytes, metric): (value, source)} of the papers' figures; where
    both FPGA logic versions have one, the default profile's (2015, paper 000)."""
    r = subprocess.run([model_tool(), "--calibration", "--csv"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    out = {}
    for f in csv.DictReader(io.StringIO(r.stdout)):
        if f.get("metric") in ("latency", "bandwidth") and f.get("op") in ("PIO put", "DMA run"):
            key = (f["op"], f["mode"], int(f["bytes"]), f["metric"])
            logic = "" if f["profile"] == "2015" else ", %s logic" % f["profile"]
            if f["profile"] == "2015" or key not in out:
                out[key] = (f["paper"], "paper %s%s" % (f["source"], logic))
    return out


def _span_us(ops):
    return max(float(o["predicted_end_us"]) for o in ops) - min(
        float(o["predicted_begin_us"]) for o in ops)


def predict(ops, p):
    """{(test, mode, size): predicted value} for node 0's messages: latency in µs
    (one way, median of the timed messages), stream in MB/s. A group whose operations
    cannot be found is left out (and named in the second value returned)."""
    mine = [o for o in ops if o["node"] == "0" and o["peer"] == "1" and o["predicted_us"]]
    out, missing = {}, []
    for mode in p.modes:
        if mode == "pio":
            puts = [o for o in mine if o["kind"] == "PIO put"]
            at = 0
            for size in p.latency_sizes(mode):
                n = p.warmup + latency_iters(size, p.iters, p.latency_bytes, p.min_iters)
                lat = []
                while len(lat) < n and at + 1 < len(puts):
                    data, word = puts[at], puts[at + 1]
                    if int(data["bytes"]) == size and int(word["bytes"]) == 8:
                        lat.append(float(word["predicted_end_us"]) -
                                   float(data["predicted_begin_us"]))
                        at += 2
                    else:
                        at += 1  # not a message of this size: the session's own puts
                if len(lat) == n:
                    out[("latency", mode, size)] = statistics.median(lat[p.warmup:])
                else:
                    missing.append("latency %s %d" % (mode, size))
            continue
        runs = [o for o in mine if o["kind"] == "DMA run" and o["mode"] == MODEL_MODE[mode]]
        for size in sorted(set(p.latency_sizes(mode)) | set(p.stream_sizes(mode))):
            group = [o for o in runs if int(o["bytes"]) == size]
            n_lat = p.warmup + latency_iters(size, p.iters, p.latency_bytes, p.min_iters)
            n_str = stream_messages(size, p.stream_bytes) if size in p.stream_sizes(mode) else 0
            if len(group) < n_lat + n_str:
                missing.append("%s %d (%d of %d runs)" % (mode, size, len(group), n_lat + n_str))
                continue
            out[("latency", mode, size)] = statistics.median(
                float(o["predicted_us"]) for o in group[p.warmup:n_lat])
            if n_str:
                stream = group[n_lat:n_lat + n_str]
                out[("stream", mode, size)] = n_str * size / _span_us(stream)  # B/µs = MB/s
    return out, missing


def table(guest_rows, predicted, papers):
    """Lines: every measured latency and stream row with its prediction and paper figure."""
    lines = ["%-7s %-5s %9s %16s %14s %12s  %s" % ("test", "mode", "size", "emulated (TCG)",
                                                    "PEACH2 model", "paper", "source")]
    for r in guest_rows:
        test, mode, size = r["test"], r["mode"], int(r["size"])
        key = (test, mode, size)
        metric, field, unit = (("latency", "median_us", "us") if test == "latency"
                               else ("bandwidth", "mb_per_s", "MB/s"))
        if test not in ("latency", "stream") or not r.get(field):
            continue
        measured = float(r[field])
        pred = predicted.get(key)
        paper = papers.get(("PIO put" if mode == "pio" else "DMA run", MODEL_MODE.get(mode),
                            size, metric))
        paper_text, source = ("", "")
        if paper:
            value, source = paper
            paper_text = "%s %s" % (value, "us" if metric == "latency" else "GB/s")
        lines.append("%-7s %-5s %9d %11.1f %-4s %9s %-4s %12s  %s" % (
            test, mode, size, measured, unit,
            "%.3f" % pred if pred is not None and metric == "latency"
            else ("%.0f" % pred if pred is not None else "-"), unit if pred is not None else "",
            paper_text, source))
    return lines
