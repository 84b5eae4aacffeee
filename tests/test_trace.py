"""Card traces end to end (issue 15): record a real run on two nodes
(`scripts/cluster.py --trace DIR`), replay it through `peach2-model`, and check that
the prediction is sane: every packet and operation matched across the nodes' traces,
nothing dropped, and the small-message latencies at the papers' figures (PIO 0.9 us,
DMA 2.0 us on-card and 2.2 us host descriptors, paper 000; ±10 % as the calibration).
"""

import csv
import os
import re
import statistics
import subprocess

import pytest

from peach2_testlib import REPO, cluster_mod

pytestmark = pytest.mark.vm

BUILD = os.environ.get("PEACH2_BUILD", os.path.join(REPO, "build"))
MODEL = os.path.join(BUILD, "model", "peach2-model")
ITERS = 20
WARMUP = 2
# tca_bench dma: ping-pong only (no stream), 8 B and 4 KiB, PIO and two descriptor
# modes. Each message is a payload and a completion word (a DMA run with an IMM
# descriptor, or two PIO puts).
BENCH = ("tca_bench dma --peer {peer} --modes pio,card,host --sizes 8,4096 "
         "--iters %d --warmup %d --no-stream" % (ITERS, WARMUP))


def _model():
    r = subprocess.run(["make", "-C", REPO, "--no-print-directory", "model"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, "make model failed:\n" + r.stdout
    return MODEL


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def traced_run(peach2_images, tmp_path_factory):
    """Trace directory and the guests' output of a traced ping-pong run."""
    d = str(tmp_path_factory.mktemp("traces"))
    with cluster_mod.Cluster(2, qemu=peach2_images["qemu"], kernel=peach2_images["kernel"],
                             initrd=peach2_images["initrd"], trace=d) as c:
        results = c.run_all(lambda i: BENCH.format(peer=1 - i), timeout=900)
        problems = c.kernel_problems(0) + c.kernel_problems(1)
    for i, (rc, out) in enumerate(results):
        assert rc == 0, "node%d: tca_bench failed:\n%s" % (i, out)
    assert not problems, problems
    return d, results


def test_every_card_wrote_a_closed_trace(traced_run):
    d, _ = traced_run
    assert sorted(os.listdir(d)) == ["node0.p2trace", "node1.p2trace"]
    for n in range(2):
        with open(os.path.join(d, "node%d.p2trace" % n), "rb") as f:
            raw = f.read()
        assert raw[:8] == b"PEACH2TR"
        assert (len(raw) - 64) % 64 == 0 and len(raw) > 64 * 100, len(raw)
        assert int.from_bytes(raw[-64 + 24:-64 + 26], "little") == 15  # END record last


def test_model_matches_everything_and_predicts_the_papers_latencies(traced_run, tmp_path):
    d, _ = traced_run
    ops_csv, summary_csv = str(tmp_path / "ops.csv"), str(tmp_path / "summary.csv")
    r = subprocess.run([_model(), d, "--ops-csv", ops_csv, "--summary-csv", summary_csv],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    report = r.stdout
    assert r.returncode == 0, report
    assert re.search(r"2 of 2 nodes traced, \d+ records \(0 dropped\)", report), report
    # No delivery without its send, no run without its start, nothing unfinished.
    assert "warning:" not in report, report
    assert "did not finish" not in report, report

    ops = _rows(ops_csv)
    pio = [o for o in ops if o["kind"] == "PIO put"]
    dma = [o for o in ops if o["kind"] == "DMA run"]
    # Both nodes send every message (ping and pong), each a payload and a word;
    # the session's own set-up adds a few more.
    messages = 2 * (ITERS + WARMUP) * 2  # per mode: both nodes, both sizes
    assert len(pio) >= 2 * messages, len(pio)
    assert len([o for o in dma if o["mode"] == "on-card"]) >= messages
    assert len([o for o in dma if o["mode"] == "host"]) >= messages
    assert all(o["predicted_us"] for o in ops), "an operation without a prediction"

    def median(kind, mode, size):
        v = [float(o["predicted_us"]) for o in ops
             if o["kind"] == kind and o["mode"] == mode and int(o["bytes"]) == size]
        assert v, (kind, mode, size)
        return statistics.median(v)

    for what, got, paper in [("PIO put, 8 B", median("PIO put", "-", 8), 0.9),
                             ("DMA on-card descriptors, 8 B + word", median("DMA run", "on-card", 8), 2.0),
                             ("DMA host descriptors, 8 B + word", median("DMA run", "host", 8), 2.2)]:
        assert abs(got / paper - 1) <= 0.10, "%s: predicted %.3f us, paper %.1f us\n%s" % (
            what, got, paper, report)
    # Bigger messages take longer, and not absurdly so (4 KiB at ~3.5 GB/s is ~1.2 us more).
    for mode in ("on-card", "host"):
        small, big = median("DMA run", mode, 8), median("DMA run", mode, 4096)
        assert small < big < small + 5, (mode, small, big)


def test_a_restarted_node_is_modelled_from_its_restart(peach2_images, tmp_path):
    """restart_node: node 1's new emulator replaces its trace and numbers its packets
    from 0 again, while node 0's trace holds the deliveries of the old instance's
    packets. The model sets those apart (a warning naming the earlier instance) instead
    of refusing them as delivered twice, and predicts both ping-pongs' messages."""
    d = str(tmp_path / "traces")
    pingpong = ("tca_bench dma --peer {peer} --modes pio --sizes 8 --iters 10 --warmup 1 "
                "--no-stream")
    with cluster_mod.Cluster(2, qemu=peach2_images["qemu"], kernel=peach2_images["kernel"],
                             initrd=peach2_images["initrd"], trace=d) as c:
        for run in range(2):
            if run:
                c.restart_node(1)
            results = c.run_all(lambda i: pingpong.format(peer=1 - i), timeout=600)
            for i, (rc, out) in enumerate(results):
                assert rc == 0, "run %d, node%d:\n%s" % (run, i, out)
    r = subprocess.run([_model(), d, "--partial"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert "delivered twice" not in r.stdout
    m = re.search(r"(\d+) deliveries came from a node's earlier instance", r.stdout)
    assert m and int(m.group(1)) >= 2 * 11, r.stdout  # every message of the first run
