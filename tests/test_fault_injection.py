"""Host-driven fault injection (issue 14): the launcher's Cluster.fault() sets the peach2
device's "fault" property through QMP qom-set. Each fault has a defined outcome:

- cut / restore: both ends see the link go down, a checked DMA stream that was running
  ends with an error (no hang, nothing wrongly delivered), and after restore the link
  comes back by itself and a new checked stream passes;
- drop N: the next N packets are lost on the wire; the peer sees the sequence gap
  (BAD_PACKET), drops the connection, and the link comes back; nothing is replayed;
- delay MS: the port sends nothing for MS ms; traffic arrives late and intact;
- stall / unstall: a card stops reading a port; the sender's traffic waits (flow
  control), and a checked stream that ran through the stall completes intact.
"""

import re
import threading
import time

import pytest

from peach2_testlib import check, sysfs_read, wait_sysfs, wait_until

pytestmark = pytest.mark.vm

# Longer than any test waits: only the cut can end it (a faster host must not finish it first).
STREAM = "--lanes 2 --count 1000000000 --max-len 16384"


@pytest.fixture(scope="module")
def fc(make_cluster):
    c = make_cluster(2, guest="busybox")
    wait_sysfs(c, 0, "link_e", "up peer=1 port=W", timeout=30)
    return c


def errors(c, node):
    out = sysfs_read(c, node, "errors_by_code")
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\d+ (\w+) (\d+)$", out, re.M)}


def links_up(c):
    wait_sysfs(c, 0, "link_e", "up peer=1 port=W", timeout=30)
    wait_sysfs(c, 1, "link_w", "up peer=0 port=E", timeout=30)


def stream(c, send_args, recv_args="--lanes 2", timeout=300, step_ms=5000):
    """tca_check dma send (node 0) / recv (node 1): [(rc, out) of node 0, of node 1]."""
    cmds = {0: "tca_check dma send --peer 1 --timeout-ms %d %s" % (step_ms, send_args),
            1: "tca_check dma recv --peer 0 --timeout-ms %d %s" % (step_ms, recv_args)}
    return c.run_all(lambda i: cmds[i], timeout=timeout, nodes=[0, 1])


class Background:
    """stream() in a thread, so that the test can inject faults meanwhile."""

    def __init__(self, c, *args, **kw):
        self.result = None
        self.started = time.monotonic()
        self.t = threading.Thread(target=self._run, args=(c,) + args, kwargs=kw, daemon=True)
        self.t.start()

    def _run(self, c, *args, **kw):
        self.result = stream(c, *args, **kw)

    def join(self, timeout):
        self.t.join(timeout)
        assert not self.t.is_alive(), "the stream did not end within %d s: a hang" % timeout
        return self.result, time.monotonic() - self.started


def passed(out):
    lines = [l for l in out.splitlines() if l.strip()]
    return bool(lines) and "PASS" in lines[-1]


def no_corruption(out):
    """The checked stream's receiver never saw a wrong byte, a duplicate or a bad record."""
    return not re.search(r"FAIL lane|bad record|sequence word", out)


def test_fault_property_refuses_bad_commands(fc):
    c = fc
    for bad in ("cut", "cut X", "drop E", "drop E -1", "delay E 99999999999", "flap E",
                "cut S"):  # S has no cable here
        with pytest.raises(Exception) as e:
            c._qom(0, "qom-set", value=bad)
        assert "peach2: fault" in str(e.value), str(e.value)
    st = c.fault_state(0)
    assert set(st) == {"E", "W", "S"}
    assert st["E"] == {"cut": 0, "stalled": 0, "deaf": 0, "held_ms": 0, "drop_left": 0,
                       "dropped": 0, "late_wakeups": 0}


def test_cut_ends_a_running_stream_with_an_error_and_restore_brings_the_link_back(fc):
    c = fc
    links_up(c)
    bg = Background(c, STREAM)
    time.sleep(8)  # the stream is under way
    c.fault(0, "cut", "E")
    (snd, rcv), took = bg.join(120)
    print("sender:\n%s\nreceiver:\n%s" % (snd[1], rcv[1]))
    assert snd[0] != 0 and rcv[0] != 0, "a stream across a cut cable cannot pass"
    assert no_corruption(rcv[1]), rcv[1]
    # Both ends see the cable gone, and it stays gone while cut.
    wait_sysfs(c, 0, "link_e", lambda v: not v.startswith("up"), timeout=10)
    wait_sysfs(c, 1, "link_w", lambda v: not v.startswith("up"), timeout=10)
    time.sleep(3)  # node 1 reconnects every second: each attempt is refused
    assert not sysfs_read(c, 1, "link_w").startswith("up")
    assert c.fault_state(0)["E"]["cut"] == 1
    before = errors(c, 0).get("LINK_DOWN", 0)
    c.run(0, "tca_check pio raw --node 1 --offset 0x1000")
    wait_until(lambda: errors(c, 0).get("LINK_DOWN", 0) > before, timeout=10,
               what="a store towards the cut cable counted LINK_DOWN")
    c.fault(0, "restore", "E")
    links_up(c)
    (snd, rcv) = stream(c, "--lanes 2 --count 200 --max-len 16384")
    assert passed(snd[1]) and passed(rcv[1]), "%s\n%s" % (snd[1], rcv[1])
    for n in (0, 1):
        assert not c.kernel_problems(n)


def test_dropped_packets_are_a_sequence_gap_at_the_peer_then_the_link_recovers(fc):
    c = fc
    links_up(c)
    bad1 = errors(c, 1).get("BAD_PACKET", 0)
    c.fault(0, "drop", "E", 1)
    assert c.fault_state(0)["E"]["drop_left"] == 1
    for off in (0x1000, 0x1004):  # the first is lost, the second reveals the gap
        c.run(0, "tca_check pio raw --node 1 --offset %#x" % off)
    wait_until(lambda: errors(c, 1).get("BAD_PACKET", 0) == bad1 + 1, timeout=20,
               what="node 1 to count the sequence gap")
    st = c.fault_state(0)["E"]
    assert st["drop_left"] == 0 and st["dropped"] == 1
    links_up(c)  # the connection was dropped and came back
    (snd, rcv) = stream(c, "--lanes 2 --count 200 --max-len 16384")
    assert passed(snd[1]) and passed(rcv[1]), "%s\n%s" % (snd[1], rcv[1])
    assert errors(c, 1).get("BAD_PACKET", 0) == bad1 + 1  # no more gaps: nothing replayed


def test_delayed_port_delivers_late_and_intact(fc):
    c = fc
    links_up(c)
    t = time.monotonic()
    c.fault(0, "delay", "E", 4000)
    (snd, rcv) = stream(c, "--lanes 1 --count 50 --max-len 4096", "--lanes 1", step_ms=20000)
    took = time.monotonic() - t
    assert passed(snd[1]) and passed(rcv[1]), "%s\n%s" % (snd[1], rcv[1])
    assert took >= 4.0, "the stream took %.1f s through a 4 s delay" % took
    assert c.fault_state(0)["E"]["held_ms"] == 0
    assert sysfs_read(c, 1, "link_w") == "up peer=0 port=E"  # never went down


def test_a_stalled_reader_holds_the_stream_back_and_it_completes_intact(fc):
    c = fc
    links_up(c)
    bad = errors(c, 1).get("BAD_PACKET", 0)
    c.fault(1, "stall", "W")
    bg = Background(c, "--lanes 2 --count 300 --max-len 65536", step_ms=30000)
    time.sleep(6)
    assert bg.t.is_alive(), "the stream ended while node 1 read nothing: %r" % (bg.result,)
    assert c.fault_state(1)["W"]["stalled"] == 1
    c.fault(1, "unstall", "W")
    (snd, rcv), took = bg.join(300)
    assert passed(snd[1]) and passed(rcv[1]), "%s\n%s" % (snd[1], rcv[1])
    assert took >= 6.0
    assert errors(c, 1).get("BAD_PACKET", 0) == bad
    assert sysfs_read(c, 1, "link_w") == "up peer=0 port=E"
