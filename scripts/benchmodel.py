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
import time

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


def summary_csv(trace_dir):
    """Where run_model leaves the per-size summary of trace_dir's run (for plot-model.py):
    build/bench/trace-dma -> build/bench/model-summary-dma.csv."""
    name = os.path.basename(os.path.normpath(trace_dir)).replace("trace-", "")
    return os.path.join(os.path.dirname(os.path.normpath(trace_dir)), "model-summary-%s.csv" % name)


def run_model(trace_dir, out_dir):
    """Replay the traces; (report text, operations). Raises RuntimeError on failure."""
    ops_csv = os.path.join(out_dir, "model_ops.csv")
    r = subprocess.run([model_tool(), trace_dir, "--ops-csv", ops_csv,
                        "--summary-csv", summary_csv(trace_dir)],
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
        if f.get("metric") in ("latency", "bandwidth") and f.get("op") in (
                "PIO put", "DMA run", "get", "atomic"):
            key = (f["op"], f["mode"], int(f["bytes"]), f["metric"])
            logic = "" if f["profile"] == "2015" else ", %s logic" % f["profile"]
            if f["profile"] == "2015" or key not in out:
                out[key] = (f["paper"], "paper %s%s" % (f["source"], logic))
    return out


def _span_us(ops):
    return max(float(o["predicted_end_us"]) for o in ops) - min(
        float(o["predicted_begin_us"]) for o in ops)


def _pio_latency(puts, at, size, n, warmup):
    """(where the search ended, predicted one-way median µs or None) of the next n PIO
    messages of `size` among puts from index `at`: a message is the payload put, then the
    8-byte completion word; the first `warmup` are left out."""
    lat = []
    while len(lat) < n and at + 1 < len(puts):
        data, word = puts[at], puts[at + 1]
        if int(data["bytes"]) == size and int(word["bytes"]) == 8:
            lat.append(float(word["predicted_end_us"]) - float(data["predicted_begin_us"]))
            at += 2
        else:
            at += 1  # not a message of this size: the session's own puts
    return at, (statistics.median(lat[warmup:]) if len(lat) == n else None)


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
                at, value = _pio_latency(puts, at, size, n, p.warmup)
                if value is None:
                    missing.append("latency %s %d" % (mode, size))
                else:
                    out[("latency", mode, size)] = value
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


class GetParams:
    """The tca_bench get parameters the run used (its defaults unless given)."""

    def __init__(self, sizes=None, iters=200, warmup=5, min_iters=10, latency_bytes=32 << 20,
                 put_size=1 << 20, stream_bytes=64 << 20, inflight=4):
        self.sizes = sizes or [4 << k for k in range(19)]  # 4 B .. 1 MiB, doubling
        self.iters, self.warmup, self.min_iters = iters, warmup, min_iters
        self.latency_bytes, self.put_size = latency_bytes, put_size
        self.stream_bytes, self.inflight = stream_bytes, inflight

    def args(self):
        return ("--sizes %s --iters %d --warmup %d --min-iters %d --latency-bytes %d "
                "--put-size %d --stream-bytes %d --inflight %d"
                % (",".join(str(s) for s in self.sizes), self.iters, self.warmup,
                   self.min_iters, self.latency_bytes, self.put_size, self.stream_bytes,
                   self.inflight))


def predict_get(ops, g):
    """As predict(), for tca_bench get (userlib/tools/bench/get.cpp): node 0 measures
    PIO put latency (8 B ping-pong), a stream of host-descriptor DMA puts, get latency at
    every size (warmup + timed gets), a stream of gets (put_size each, `inflight` at a
    time), then CAS and FAA (an FAA of 0 first). Keys are the CSV's (test, mode, size)."""
    mine = [o for o in ops if o["node"] == "0" and o["peer"] == "1" and o["predicted_us"]]
    out, missing = {}, []

    def of(kind, mode=None, size=None):
        return [o for o in mine if o["kind"] == kind and (mode is None or o["mode"] == mode)
                and (size is None or int(o["bytes"]) == size)]

    def put(key, value, what):
        if value is None:
            missing.append(what)
        else:
            out[key] = value

    n_pio = g.warmup + latency_iters(8, g.iters, g.latency_bytes, g.min_iters)
    put(("put_pio", "pio", 8), _pio_latency(of("PIO put"), 0, 8, n_pio, g.warmup)[1], "put_pio 8")
    count = g.stream_bytes // g.put_size
    runs = of("DMA run", "host", g.put_size)
    put(("dma_put_stream", "host", g.put_size),
        count * g.put_size / _span_us(runs[:count]) if len(runs) >= count else None,
        "dma_put_stream (%d of %d runs)" % (len(runs), count))
    for size in g.sizes:
        gets = of("get", size=size)
        n = g.warmup + latency_iters(size, g.iters, g.latency_bytes, g.min_iters)
        put(("get", "", size),
            statistics.median(float(o["predicted_us"]) for o in gets[g.warmup:n])
            if len(gets) >= n else None, "get %d (%d of %d)" % (size, len(gets), n))
    n = (g.warmup + latency_iters(g.put_size, g.iters, g.latency_bytes, g.min_iters)
         if g.put_size in g.sizes else 0)
    stream = of("get", size=g.put_size)[n:n + count]
    put(("get_stream", "", g.put_size),
        count * g.put_size / _span_us(stream) if len(stream) == count else None,
        "get_stream %d (%d of %d)" % (g.put_size, len(stream), count))
    for test in ("cas", "faa"):
        atomics = of("atomic", test)
        put((test, "", 8), statistics.median(float(o["predicted_us"]) for o in atomics[-g.iters:])
            if len(atomics) >= g.warmup + g.iters else None, test)
    return out, missing


# tca_bench's row tests -> (metric, the model's operation kind for the paper's figure)
# (tca_bench dma: latency, stream; tca_bench get: the rest).
ROW_METRIC = {"latency": ("latency", None), "stream": ("bandwidth", None),
              "put_pio": ("latency", "PIO put"), "dma_put_stream": ("bandwidth", "DMA run"),
              "get": ("latency", "get"), "get_stream": ("bandwidth", "get"),
              "cas": ("latency", "atomic"), "faa": ("latency", "atomic")}


def _paper_key(test, mode, size):
    metric, op = ROW_METRIC[test]
    if op is None:
        op = "PIO put" if mode == "pio" else "DMA run"
    model_mode = test if op == "atomic" else MODEL_MODE.get(mode or "pio")
    return (op, model_mode, size, metric)


def table(guest_rows, predicted, papers):
    """Lines: every measured latency and bandwidth row with its prediction and paper figure."""
    lines = ["%-14s %-5s %9s %16s %14s %12s  %s" % ("test", "mode", "size", "emulated (TCG)",
                                                     "PEACH2 model", "paper", "source")]
    for r in guest_rows:
        test, mode, size = r["test"], r["mode"], int(r["size"])
        if test not in ROW_METRIC:
            continue
        metric = ROW_METRIC[test][0]
        field, unit = ("median_us", "us") if metric == "latency" else ("mb_per_s", "MB/s")
        if not r.get(field):
            continue
        measured = float(r[field])
        pred = predicted.get((test, mode, size))
        paper = papers.get(_paper_key(test, mode, size))
        paper_text, source = ("", "")
        if paper:
            value, source = paper
            paper_text = "%s %s" % (value, "us" if metric == "latency" else "GB/s")
        lines.append("%-14s %-5s %9d %11.1f %-4s %9s %-4s %12s  %s" % (
            test, mode or "-", size, measured, unit,
            "%.3f" % pred if pred is not None and metric == "latency"
            else ("%.0f" % pred if pred is not None else "-"), unit if pred is not None else "",
            paper_text, source))
    return lines


def compare(trace_dir, rows, predict_rows, who):
    """Print every measured row beside the model's prediction and the paper's figure:
    replay trace_dir, find the benchmark's messages with predict_rows(ops) (predict or
    predict_get with their parameters). False (and why) if the model failed."""
    print("\n=== emulated wall clock / predicted for real PEACH2 / paper ===")
    t0 = time.monotonic()
    try:
        report, ops = run_model(trace_dir, os.path.dirname(trace_dir))
    except (RuntimeError, OSError) as e:
        print("%s: %s" % (who, e))
        return False
    print(report.split("\n\n")[0])
    predicted, missing = predict_rows(ops)
    for line in table(rows, predicted, paper_figures()):
        print(line)
    if missing:
        print("not found among the model's operations: %s" % ", ".join(missing))
    print("(latency one way, us; bandwidth MB/s. Emulated: QEMU under TCG, traced. Predicted: "
          "peach2-model %s, %.1f s, default profile.)" % (trace_dir, time.monotonic() - t0))
    return True
