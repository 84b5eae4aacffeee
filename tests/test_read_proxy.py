"""The read proxy across two VMs: one-sided get, remote CAS/FAA, refusals, a target
that exits mid-request, a request flood, and the benchmark's checks.

The target side is always `tca_check rp serve`, which exports memory and then only
sleeps: the target's driver serves every request (docs/hardware.md section 9). In the
get test the serving process is even stopped with SIGSTOP while the peer reads.
"""

import re
import threading
import time

import pytest

from peach2_testlib import (check, cluster_mod, err_code, irq_count, rp_pair, sysfs_read,
                             wait_until)

pytestmark = pytest.mark.vm

SERVE_LOG = "/tmp/rp_serve.log"


def _rproxy(c, node):
    """The driver's sysfs `rproxy` counters as {name: int}."""
    out = sysfs_read(c, node, "rproxy")
    vals = {}
    for line in out.splitlines():
        m = re.match(r"(\w+) (\d+)$", line.strip())
        assert m, "unexpected line in rproxy: %r" % line
        vals[m.group(1)] = int(m.group(2))
    return vals


def _start_serve(c, node, args):
    """Start `tca_check rp serve` in the background on `node`; return its pid."""
    check(c, node, "rm -f %s" % SERVE_LOG)
    out = check(c, node, "tca_check rp serve %s >%s 2>&1 & echo $!" % (args, SERVE_LOG))
    return int(out.strip().splitlines()[-1])


def _serve_log(c, node):
    return c.run(node, "cat %s" % SERVE_LOG)[1]


def _wait_exit(c, node, pid, what, timeout=120):
    """Wait for the background process `pid` on `node` (`what` it is) to exit."""
    wait_until(lambda: c.run(node, "kill -0 %d 2>/dev/null" % pid)[0] != 0,
               timeout=timeout, what="%s on node%d to exit" % (what, node))


def _wait_serve(c, node, pid, timeout=120):
    """Wait for the background server to exit; return its log."""
    _wait_exit(c, node, pid, "tca_check rp serve", timeout)
    return _serve_log(c, node)


# A busy loop at SCHED_FIFO 98 (a node busy with more urgent work): the serving thread,
# an ordinary task, waits it out while requests pile up in the ring. It is armed before
# the client starts (python3 takes seconds to start in a guest) and begins `delay` s
# after the server's READY, so it lands while the gets run however fast the host is.
RT_BUSY = """
import os, sys, time
secs, log, delay = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(98))
open("/tmp/rt_busy.armed", "w").close()
limit = time.monotonic() + 120
while b"READY" not in open(log, "rb").read():
    if time.monotonic() > limit:
        sys.exit("rt_busy: no READY in %s" % log)
    time.sleep(0.001)
time.sleep(delay)
end = time.monotonic() + secs
while time.monotonic() < end:
    pass
print("rt_busy: %.1f s busy" % secs)
"""


def _arm_rt_busy(c, node, tmp_path, secs, delay=0.0):
    """Start RT_BUSY on `node` (after _start_serve there); returns its pid once armed."""
    src = tmp_path / "rt_busy.py"
    src.write_text(RT_BUSY)
    c.copy_in(str(src), "/tmp/rt_busy.py", nodes=[node])
    out = check(c, node, "rm -f /tmp/rt_busy.armed; python3 /tmp/rt_busy.py %s %s %s "
                ">/tmp/rt_busy.log 2>&1 & echo $!" % (secs, SERVE_LOG, delay))
    wait_until(lambda: c.run(node, "test -e /tmp/rt_busy.armed")[0] == 0, timeout=60,
               what="the real-time busy loop on node%d to start" % node)
    return int(out.strip().splitlines()[-1])


def _rt_busy_done(c, node, pid):
    """Wait for RT_BUSY to end; assert it ran."""
    _wait_exit(c, node, pid, "the real-time busy loop")
    log = c.run(node, "cat /tmp/rt_busy.log")[1]
    assert "s busy" in log, "the real-time busy loop did not run: %s" % log


@pytest.mark.parametrize("target,reader", [(0, 1), (1, 0)])
def test_get_random_sizes_while_target_process_is_stopped(cluster2, target, reader):
    """300 gets of random sizes (4 B .. 1 MiB) at random offsets, 4 in flight, each
    verified byte for byte, while the exporting process is stopped (SIGSTOP): no
    process on the target takes part."""
    c = cluster2
    before = _rproxy(c, target)
    pid = _start_serve(c, target, "--peer %d --seed 11 --size 4M --seconds 600" % reader)
    # The handshake needs the client; READY follows it.
    client = {}

    def run_client():
        client["res"] = c.run(reader, "tca_check rp get-verify --peer %d --seed 11 --iters 300 "
                              "--max-len 1M --inflight 4" % target, timeout=600)

    t = threading.Thread(target=run_client)
    t.start()
    wait_until(lambda: "READY" in _serve_log(c, target), timeout=120,
               what="serve READY on node%d" % target)
    check(c, target, "kill -STOP %d" % pid)
    t.join()
    rc, out = client["res"]
    state = c.run(target, "cat /proc/%d/stat" % pid)[1].split()
    check(c, target, "kill -CONT %d" % pid)
    log = _wait_serve(c, target, pid)
    assert rc == 0, out
    m = re.search(r"get-verify: (\d+) gets, (\d+) bytes, (\d+) mismatches, (\d+) errors", out)
    assert m, out
    assert (int(m.group(1)), int(m.group(3)), int(m.group(4))) == (300, 0, 0), out
    assert state[2] == "T", "the serving process was not stopped during the gets: %s" % state
    assert "done (clients done)" in log, log
    after = _rproxy(c, target)
    assert after["served_read"] - before["served_read"] >= 300, (before, after)
    assert after["read_bytes"] - before["read_bytes"] == int(m.group(2)), (before, after)
    assert after["exports"] == before["exports"], "export left behind: %s" % after


def test_queued_gets_share_chain_runs(cluster2, tmp_path):
    """2000 gets of 4 B .. 64 KiB from node 1 with 64 in flight, every byte checked: node
    0's driver answers the requests it finds queued together, in one chain run on its proxy
    channel, so it ran fewer runs than it answered requests (sysfs `reply_runs` against
    `replies` and `served_read`), with no reply errors; and most of those runs, ending
    inside their start, raised no interrupt on the reply channel. Requests are queued
    together for sure when the gets begin: node 0's CPU is busy at a real-time priority
    for 0.2 s then (whether they queue otherwise depends on the host's scheduling)."""
    c = cluster2
    before = _rproxy(c, 0)
    irqs_before = irq_count(c, 0, "peach2-0-rpdma")
    pid = _start_serve(c, 0, "--peer 1 --seed 12")
    busy = _arm_rt_busy(c, 0, tmp_path, 0.2)
    rc_c, out_c = c.run(1, "tca_check rp get-verify --peer 0 --seed 12 --iters 2000 "
                        "--max-len 64K --inflight 64", timeout=600)
    out_s = _wait_serve(c, 0, pid)
    _rt_busy_done(c, 0, busy)
    assert rc_c == 0 and "done (clients done)" in out_s, out_s + out_c
    m = re.search(r"get-verify: (\d+) gets, (\d+) bytes, (\d+) mismatches, (\d+) errors", out_c)
    assert m and (int(m.group(1)), int(m.group(3)), int(m.group(4))) == (2000, 0, 0), out_c
    after = _rproxy(c, 0)
    d = {k: after[k] - before[k] for k in after}
    # The handshake (handle exchange) adds a few gets of its own.
    assert 2000 <= d["served_read"] <= 2010 and d["read_bytes"] >= int(m.group(2)), d
    assert d["reply_errors"] == 0 and d["card_rx_refused"] == 0, d
    # Every request the card queued was answered exactly once, by the thread's runs.
    assert d["replies"] == d["card_rx_queued"], d
    assert d["reply_runs"] < d["served_read"], "no batching: %s" % d
    assert after["replies_max"] > 1, after
    # The reply channel's interrupt is masked unless a run outlasts its start: most
    # runs (those of up to 64 KiB, the card's first slice) raise none.
    irqs = irq_count(c, 0, "peach2-0-rpdma") - irqs_before
    print("reply channel interrupts: %d for %d runs" % (irqs, d["reply_runs"]))
    assert irqs < d["reply_runs"] // 2, (irqs, d)
    print("%d requests answered in %d chain runs (%.1f per run; the most in one run since "
          "boot: %d)" % (d["replies"], d["reply_runs"], d["replies"] / d["reply_runs"],
                         after["replies_max"]))


POLL_US = "/sys/module/peach2/parameters/rp_poll_us"


def test_serving_thread_looks_for_the_next_request(cluster2):
    """Node 1 gets from node 0 one at a time (every byte checked). The launcher turned
    the look on (2 guests, each with a host CPU: scripts/cluster.py rp_look_us). With
    rp_poll_us=0 node 0's thread takes each request by its interrupt (sysfs `polled`
    unchanged, the look `poll_us` 0); with rp_poll_us=200 it looks for the next one after
    answering and finds many that way, with fewer request interrupts than requests.
    With a busy loop on node 0 the looks give way (`looks_yielded` well above the idle
    node's count: the scheduler asks for the CPU back, or the looks' share is spent).
    Requests 5 ms apart shrink the look back to none (halved at each interrupt that came
    too late)."""
    c = cluster2
    default = int(check(c, 0, "cat %s" % POLL_US))
    assert default == cluster_mod.rp_look_us(c.n, c.transport, c.link_transport), default

    def gets(args):
        before, irqs = _rproxy(c, 0), irq_count(c, 0, "peach2-0-rp")
        rc_s, out_s, rc_c, out_c = rp_pair(c, 0, 1, "--seed 5",
                                           "get-verify --seed 5 --max-len 64 " + args)
        assert rc_s == 0 and rc_c == 0, out_s + out_c
        m = re.search(r"get-verify: (\d+) gets, \d+ bytes, (\d+) mismatches, (\d+) errors", out_c)
        assert m and int(m.group(2)) == int(m.group(3)) == 0, out_c
        after = _rproxy(c, 0)
        d = {k: after[k] - before[k] for k in after}
        d["irqs"] = irq_count(c, 0, "peach2-0-rp") - irqs
        print("%s: served %d, polled %d, request interrupts %d, looks yielded %d, look now %d us"
              % (args, d["served_read"], d["polled"], d["irqs"], d["looks_yielded"],
                 after["poll_us"]))
        assert d["served_read"] >= int(m.group(1)), d
        return d, after

    try:
        check(c, 0, "echo 0 > %s" % POLL_US)
        d, after = gets("--iters 300")
        assert d["polled"] == 0 and after["poll_us"] == 0, d
        assert d["irqs"] >= d["served_read"], d
        check(c, 0, "echo 200 > %s" % POLL_US)
        d, after = gets("--iters 3000")
        # How many come soon enough for a look depends on the host's load: some do.
        assert d["polled"] > 0 and d["irqs"] < d["served_read"], d
        alone = d["looks_yielded"]  # the node's own daemons wake now and then
        # A busy loop wants node 0's CPU: the looks give it back.
        hog = int(check(c, 0, "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!")
                  .split()[-1])
        try:
            d, after = gets("--iters 3000")
        finally:
            check(c, 0, "kill %d" % hog)
        # (5 runs: 89-191 against 15-23 alone; a node busier than usual raises both.)
        assert d["looks_yielded"] > alone + 20, (alone, d)
        d, after = gets("--iters 12 --pause-us 5000")
        assert after["poll_us"] == 0, after
    finally:
        check(c, 0, "echo %d > %s" % (default, POLL_US))


def test_concurrent_atomics_from_two_nodes_give_the_exact_total(cluster2):
    """Node 1 adds 1 to a counter on node 0, 600 times, while node 0's own process adds
    1 to the same counter through its read proxy (a request to itself) 600 times: the
    final value is exactly 1200, and every old value node 1 saw was increasing."""
    rc_s, out_s, rc_c, out_c = rp_pair(cluster2, 0, 1, "--counter --self-faa 600 --seed 3",
                                       "faa --count 600 --seed 3")
    assert rc_s == 0 and rc_c == 0, out_s + out_c
    assert re.search(r"faa: 600 adds of 1, .* monotonic=yes", out_c), out_c
    m = re.search(r"serve: counter=(\d+)", out_s)
    assert m and int(m.group(1)) == 1200, out_s + out_c
    assert "self-faa: 600 adds done" in out_s, out_s


def test_cas_returns_the_old_value_and_swaps_only_on_match(cluster2):
    """Node 0 CASes a counter on node 1: a mismatching compare returns the old value and
    changes nothing; a matching one returns the old value and swaps."""
    rc_s, out_s, rc_c, out_c = rp_pair(cluster2, 1, 0, "--counter --seed 4",
                                       "cas-check --seed 4")
    assert rc_s == 0 and rc_c == 0, out_s + out_c
    assert "cas-check: PASS" in out_c, out_c


# The library reports the target's RP_NOT_EXPORTED as TCA_ENOTEXPORTED (with that status);
# a handle without an export is refused by the library itself (nothing sent).
@pytest.mark.parametrize("serve_args,client_args,expect", [
    ("", "--forge key", "remote-notexported"),
    ("", "--forge none", "notexported"),
    ("--flags atomic", "--op get --on data", "remote-notexported"),
    ("--flags read", "--op cas --on data", "remote-notexported"),
    ("--export-len 4096 --whole-handle", "--offset 8192 --len 64", "remote:RP_RANGE"),
    ("--unexport-after-ms 1000", "", "remote-notexported"),
    ("--free-after-ms 1000", "", "remote-notexported"),
], ids=["wrong-key", "never-exported", "read-on-atomic-only", "cas-on-read-only",
        "outside-export", "after-unexport", "after-free"])
def test_requests_the_target_must_refuse_are_refused_and_counted(cluster2, serve_args,
                                                                 client_args, expect):
    """Each refusal arrives as the exact error, and the target's driver counts it."""
    c = cluster2
    before = _rproxy(c, 0)
    remote = expect.startswith("remote")
    tool_expect = "notexported" if expect == "remote-notexported" else expect
    rc_s, out_s, rc_c, out_c = rp_pair(c, 0, 1, "--seed 5 " + serve_args,
                                       "expect-refused --seed 5 --expect %s %s" % (tool_expect, client_args))
    assert rc_c == 0 and "PASS" in out_c, out_c + out_s
    assert rc_s == 0, out_s
    after = _rproxy(c, 0)
    if expect == "remote:RP_RANGE":
        assert after["refused_range"] > before["refused_range"], (before, after)
    elif remote:
        assert "status=%d (RP_NOT_EXPORTED)" % err_code("RP_NOT_EXPORTED") in out_c, out_c
        assert after["refused_not_exported"] > before["refused_not_exported"], (before, after)
    else:
        assert after["refused_not_exported"] == before["refused_not_exported"], (before, after)
    assert after["exports"] == before["exports"], after


@pytest.mark.parametrize("how", ["exit", "abort"])
def test_target_process_dies_while_requests_are_in_flight(cluster2, how):
    """The exporting process ends (exit without cleanup, or SIGABRT) 3 s into a flood of
    gets: gets before succeed, gets after are refused (RP_NOT_EXPORTED), nothing hangs
    or times out, the export is gone and the node still serves a new exporter."""
    c = cluster2
    rc_s, out_s, rc_c, out_c = rp_pair(c, 0, 1, "--seed 6 --%s-after-ms 3000" % how,
                                       "flood --seed 6 --seconds 8 --inflight 16 --allow-refused --no-done")
    m = re.search(r"flood: (\d+) completed .* ok=(\d+) rp_full=(\d+) refused=(\d+) "
                  r"timeout=(\d+) other=(\d+)", out_c)
    assert rc_c == 0 and m, out_c + out_s
    ok, refused, timeout, other = (int(m.group(i)) for i in (2, 4, 5, 6))
    assert ok > 0 and refused > 0 and timeout == 0 and other == 0, out_c
    assert _rproxy(c, 0)["exports"] == 0
    # The node serves the next exporter normally.
    rc_s, out_s, rc_c, out_c = rp_pair(c, 0, 1, "--seed 7", "get-verify --seed 7 --iters 20")
    assert rc_s == 0 and rc_c == 0 and " 0 mismatches, 0 errors" in out_c, out_s + out_c


def test_request_flood_fills_the_ring_without_wedging_the_target(cluster2, tmp_path):
    """1000 gets in flight against a 256-entry ring for 10 s. The target's shell
    answers within 2 s all along (the serving thread shares the CPU: at SCHED_FIFO it
    took 4-7 s); half a second of a real-time task on the target, 4 s after the server's
    READY, fills the ring (CI saw a flood of 444 000 gets without one RP_FULL when the
    thread kept up), the card answers the excess RP_FULL and the library retries them;
    every get completes and plain gets work afterwards."""
    c = cluster2
    before = _rproxy(c, 0)
    pid = _start_serve(c, 0, "--peer 1 --seed 8 --seconds 600")
    busy = _arm_rt_busy(c, 0, tmp_path, 0.5, delay=4.0)
    res = {}

    def flood():
        res["flood"] = c.run(1, "tca_check rp flood --peer 0 --seed 8 --seconds 10 "
                             "--inflight 1000", timeout=300)

    t = threading.Thread(target=flood)
    t.start()
    wait_until(lambda: "READY" in _serve_log(c, 0), timeout=120, what="serve READY")
    answers = []                      # the target answers commands mid-flood
    for _ in range(4):
        t0 = time.monotonic()
        during = _rproxy(c, 0)
        answers.append(time.monotonic() - t0)
        time.sleep(0.5)
    t.join()
    rc, out = res["flood"]
    log = _wait_serve(c, 0, pid)
    _rt_busy_done(c, 0, busy)
    assert rc == 0, out
    m = re.search(r"ok=(\d+) rp_full=(\d+) refused=(\d+) timeout=(\d+) other=(\d+)", out)
    assert m, out
    ok, full = int(m.group(1)), int(m.group(2))
    assert ok > 1000 and full > 0, "the ring never filled: %s" % out
    assert "done (clients done)" in log, log
    after = _rproxy(c, 0)
    assert after["card_rx_refused"] - before["card_rx_refused"] >= full, (before, after)
    assert during["served_read"] > before["served_read"], (before, during)
    print("flood: %s; the target's shell answered mid-flood in %s s"
          % (m.group(0), " ".join("%.2f" % a for a in answers)))
    assert max(answers) < 2.0, "the flood took the target's CPU: %s" % answers
    rc_s, out_s, rc_c, out_c = rp_pair(c, 0, 1, "--seed 9", "get-verify --seed 9 --iters 20")
    assert rc_s == 0 and rc_c == 0 and " 0 mismatches, 0 errors" in out_c, out_s + out_c


def test_get_bench_runs_and_reports_both_ratios(cluster2):
    """A short `tca_bench get`: every get verified, the table has a row per size, and the
    two ratios the issue asks for are reported (their values are a benchmark matter)."""
    results = cluster2.run_all(lambda i: "tca_bench get --peer %d --iters 20 --sizes 4,8,4K,1M "
                               "--latency-bytes 4M --stream-bytes 16M" % (1 - i), timeout=900)
    (rc0, out0), (rc1, out1) = results
    assert rc0 == 0 and rc1 == 0, out0 + out1
    for size in ("4", "8", "4096", "1048576"):
        assert re.search(r"^get\s+-\s+%s\s" % size, out0, re.M), "no get row for %s:\n%s" % (size, out0)
    assert re.search(r"get 8 B / put 8 B latency: [\d.]+ / [\d.]+ us = [\d.]+", out0), out0
    assert re.search(r"get / DMA put bandwidth .*= [\d.]+", out0), out0
    assert re.search(r"^cas\s", out0, re.M) and re.search(r"^faa\s", out0, re.M), out0
