"""A hostile peer on a link port (issue 14): whatever it sends, it hurts only its own link.

Node 0 and node 1 boot, cabled 0E-1W; the cards think the cluster has 3 nodes, and node
0's W port listens for "node 2", which is tests/rogue_peer.py: it sends the crafted
packets of the issue straight onto the wire. QEMU runs with `-d guest_errors`, so every
error line the card logs reaches node 0's QEMU log, whose growth is measured.
"""

import os
import random
import re
import socket
import struct
import threading
import time

import pytest

from peach2_testlib import (check, cluster_mod, hw, irq_count, sysfs_read, wait_sysfs,
                             wait_until)
from rogue_peer import HELLO, RP_PIECE, RP_REQ, RoguePeer, doorbell, node_base

pytestmark = pytest.mark.vm

NODES = 3  # what the cards are told; "node 2" is the rogue


@pytest.fixture(scope="module")
def rc(make_cluster):
    # The rogue writes link packets straight into the socket: the socket transport. The
    # shared-memory transport's own hostile peer is in tests/test_link_transport.py.
    c = make_cluster(2, guest="busybox", device_props={"nodes": NODES},
                     cables=[((0, "E"), (1, "W")), ((0, "W"), (2, "E"))],
                     qemu_args=["-d", "guest_errors"], link_transport="socket")
    wait_sysfs(c, 0, "link_e", "up peer=1 port=W", timeout=30)
    return c


def rogue(c):
    return RoguePeer(cluster_mod.link_socket_path(c.run_dir, 0, "W"))


def qemu_log(c, node=0):
    return cluster_mod.node_paths(c.run_dir, node)["stderr"]


def errors(c, node):
    """{name: count} from errors_by_code."""
    out = sysfs_read(c, node, "errors_by_code")
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\d+ (\w+) (\d+)$", out, re.M)}


def grew(before, after, name):
    return after.get(name, 0) - before.get(name, 0)


def port_counters(c, node, port):
    line = [l for l in sysfs_read(c, node, "counters").splitlines() if l.startswith(port + " ")]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line[0])}


def rogue_up(c, r):
    r.hello(2, NODES)
    wait_sysfs(c, 0, "link_w", "up peer=2 port=E", timeout=20)


def honest_link_intact(c, before0, before1):
    """Node 0 <-> node 1 stayed up and node 1 saw no bad packet."""
    assert sysfs_read(c, 0, "link_e") == "up peer=1 port=W"
    assert sysfs_read(c, 1, "link_w") == "up peer=0 port=E"
    assert grew(before1, errors(c, 1), "BAD_PACKET") == 0


def test_hello_repeats_log_nothing(rc):
    """Hole 3: 200 000 HELLOs used to grow the QEMU log by 14 MB."""
    c, n = rc, 200000
    size0 = os.path.getsize(qemu_log(c))
    before = errors(c, 0)
    rx0 = port_counters(c, 0, "W")["rx_pkts"]
    with rogue(c) as r:
        rogue_up(c, r)
        r.send_raw(b"".join(r.hello_packet(2, NODES) for _ in range(n)))
        wait_until(lambda: port_counters(c, 0, "W")["rx_pkts"] >= rx0 + n + 1, timeout=120,
                   what="node 0 to take %d HELLOs" % n)
        assert sysfs_read(c, 0, "link_w") == "up peer=2 port=E"
    grown = os.path.getsize(qemu_log(c)) - size0
    assert grown < 4096, "QEMU log grew by %d bytes over %d HELLO repeats" % (grown, n)
    assert errors(c, 0) == before


def test_refused_hellos_are_counted_and_their_log_lines_rate_limited(rc):
    """A flood of HELLOs claiming "node 15 of 3": each counted, the log bounded."""
    c, n = rc, 50000
    size0 = os.path.getsize(qemu_log(c))
    before = errors(c, 0)
    with rogue(c) as r:
        r.send_raw(b"".join(r.hello_packet(15, NODES) for _ in range(n)))
        wait_until(lambda: grew(before, errors(c, 0), "BAD_PACKET") >= n, timeout=120,
                   what="%d refused HELLOs counted" % n)
        assert sysfs_read(c, 0, "link_w") in ("connected", "down")
    assert grew(before, errors(c, 0), "BAD_PACKET") == n
    grown = os.path.getsize(qemu_log(c)) - size0
    assert grown < 16384, "QEMU log grew by %d bytes over %d refused HELLOs" % (grown, n)


def test_hop_count_never_wraps(rc):
    """Hole 2: hops=255 used to reach node 1 as hops=0 with a source that is not its
    neighbour, dropping the honest link (or, with source 0, pass as node 0's own)."""
    c = rc
    b0, b1 = errors(c, 0), errors(c, 1)
    with rogue(c) as r:
        rogue_up(c, r)
        r.write(1, 0x1000, b"\xee" * 8, src=2, hops=255)
        r.write(1, 0x1000, b"\xee" * 8, src=0, hops=255)
        r.write(1, 0x1000, b"\xee" * 8, src=2, hops=hw("PEACH2_PKT_HOP_LIMIT"))
        wait_until(lambda: grew(b0, errors(c, 0), "HOP_LIMIT") >= 3, timeout=20,
                   what="3 HOP_LIMIT on node 0")
        assert sysfs_read(c, 0, "link_w") == "up peer=2 port=E"  # dropped, not a bad stream
    assert grew(b0, errors(c, 0), "HOP_LIMIT") == 3
    honest_link_intact(c, b0, b1)


def test_identity_spoofs_are_refused(rc):
    """A node id past the node count, or the peer port node 0's E already has."""
    c = rc
    b0, b1 = errors(c, 0), errors(c, 1)
    with rogue(c) as r:
        r.hello(1, NODES, port="W")  # node 1's W is cabled to node 0's E
        wait_until(lambda: grew(b0, errors(c, 0), "BAD_PACKET") >= 1, timeout=20)
        assert not sysfs_read(c, 0, "link_w").startswith("up")
        r.hello(NODES, NODES)  # the first id past the end
        wait_until(lambda: grew(b0, errors(c, 0), "BAD_PACKET") >= 2, timeout=20)
        assert not sysfs_read(c, 0, "link_w").startswith("up")
        rogue_up(c, r)  # the honest identity on the same stream is taken
    honest_link_intact(c, b0, b1)


def _malformed():
    """(name, function of a RoguePeer giving the bytes to send after a good HELLO) for
    every class of malformed packet. (The header's former reserved word is the end-to-end
    packet number since issue 15: any value is well formed.)"""
    w, rp = hw("PEACH2_PKT_WRITE"), hw("PEACH2_PKT_RPREQ")
    to1 = node_base(1) + 0x1000
    return [
        ("bad magic", lambda r: r.packet(w, b"x" * 8, src=2, dst=1, addr=to1, magic=0xdeadbeef)),
        ("bad version", lambda r: r.packet(w, b"x" * 8, src=2, dst=1, addr=to1, version=9)),
        ("unknown type", lambda r: r.packet(9, b"x" * 8, src=2, dst=1, addr=to1)),
        ("flags set", lambda r: r.packet(w, b"x" * 8, src=2, dst=1, addr=to1, flags=1)),
        ("node id >= 16", lambda r: r.packet(w, b"x" * 8, src=2, dst=40, addr=to1)),
        ("HELLO of 8 bytes", lambda r: r.packet(hw("PEACH2_PKT_HELLO"), b"x" * 8, src=2, dst=2)),
        ("empty WRITE", lambda r: r.packet(w, b"", src=2, dst=1, addr=to1)),
        ("WRITE over 4096", lambda r: r.packet(w, b"x" * 4100, src=2, dst=1, addr=to1)),
        ("WRITE past the window", lambda r: r.packet(w, b"x" * 8, src=2, dst=15,
                                                     addr=hw("PEACH2_WINDOW_SIZE") - 4)),
        ("RPREQ of 32 bytes", lambda r: r.packet(rp, b"x" * 32, src=2, dst=0, addr=doorbell(0))),
        ("sequence gap", lambda r: r.packet(w, b"x" * 8, src=2, dst=1, addr=to1, seq=7)),
        ("hops 0 from another source", lambda r: r.packet(w, b"x" * 8, src=1, dst=1, addr=to1)),
        ("dst_node not the address's", lambda r: r.packet(w, b"x" * 8, src=2, dst=0, addr=to1)),
        ("HELLO from node 99", lambda r: r.hello_packet(99, NODES)),
    ]


def test_every_malformed_packet_class_drops_only_the_rogue_connection(rc):
    c = rc
    b0, b1 = errors(c, 0), errors(c, 1)
    kinds = _malformed()
    for i, (name, bad) in enumerate(kinds):
        with rogue(c) as r:
            good = r.hello_packet(2, NODES)
            r.send_raw(good + bad(r))
            assert r.closed_by_card(timeout=20), "%s: the card kept the connection" % name
        wait_until(lambda: grew(b0, errors(c, 0), "BAD_PACKET") >= i + 1, timeout=20,
                   what="BAD_PACKET for %s" % name)
    assert grew(b0, errors(c, 0), "BAD_PACKET") == len(kinds)
    # A WRITE before any HELLO, on a fresh stream.
    with rogue(c) as r:
        r.write(1, 0x1000, b"x" * 8, src=2)
        assert r.closed_by_card(timeout=20)
    wait_until(lambda: grew(b0, errors(c, 0), "BAD_PACKET") == len(kinds) + 1, timeout=20)
    honest_link_intact(c, b0, b1)
    with rogue(c) as r:  # and the port still takes an honest peer
        rogue_up(c, r)


def test_a_peer_that_never_reads_stalls_only_its_own_link(rc):
    """Hole 1: the rogue floods node 0 with read-proxy requests and never reads the
    answers; its link backs up. A local 1 MiB-per-start DMA chain on node 0 used to stop
    with every other channel (DMA_ABORTED after the driver's 10 s); now it runs on.
    Closing the stuck link restarts the read proxy's waiting channel, which ends."""
    c, n = rc, 150000
    w0 = port_counters(c, 0, "W")["tx_bytes"]
    with rogue(c) as r:
        rogue_up(c, r)
        r.send_raw(b"".join(r.rpreq_packet(0, src=2, seq=i + 1, cpl=0x1000)
                            for i in range(n)))
        # Answers (24 + 8 payload bytes, two packets each) pile up towards the rogue.
        wait_until(lambda: port_counters(c, 0, "W")["tx_bytes"] - w0 > (3 << 20), timeout=120,
                   what="node 0's answers to back up on W")
        t = time.monotonic()
        out = check(c, 0, "tca_check dma chain --descs 1024 --piece 1024 --starts 3 "
                          "--timeout-ms 20000", timeout=300)
        took = time.monotonic() - t
        assert "PASS" in out.strip().splitlines()[-1], out
        assert sysfs_read(c, 0, "link_e") == "up peer=1 port=W"
    # The rogue hung up: W's queue is dropped, whatever waited for it runs (and ends).
    wait_until(lambda: not sysfs_read(c, 0, "link_w").startswith("up"), timeout=30)
    wait_until(lambda: not re.search("busy|wedged", sysfs_read(c, 0, "dma")), timeout=60,
               what="node 0's DMA channels to go idle after the stuck link closed")
    out = check(c, 0, "tca_check dma chain --descs 64 --starts 2", timeout=300)
    assert "PASS" in out.strip().splitlines()[-1], out
    print("local chain (3 x 1 MiB) with W backed up: %.1f s" % took)


def test_a_write_storm_into_the_mailbox_leaves_the_node_its_cpu(rc):
    """The rogue streams 8-byte WRITEs into its slot of node 0's mailbox for 8 s, each
    setting INT_STATUS.MAILBOX. The card sends no new message until the driver clears the
    bit, so node 0 takes one interrupt per batch the card receives, not one per write
    (an interrupt per write would take its CPU), and its shell answers within 2 s all
    along. The honest link stays up."""
    c = rc
    b0, b1 = errors(c, 0), errors(c, 1)
    rx0 = port_counters(c, 0, "W")["rx_pkts"]
    irqs0 = irq_count(c, 0, "peach2-0")
    slot = (hw("PEACH2_CARD_OFF") + hw("PEACH2_CARD_MAILBOX_OFF")
            + 2 * hw("PEACH2_MAILBOX_SLOT_SIZE"))  # the rogue's (node 2's) slot
    sent, answers = [0], []
    with rogue(c) as r:
        rogue_up(c, r)
        end = time.monotonic() + 8

        def storm():
            while time.monotonic() < end:
                r.send_raw(b"".join(r.write_packet(0, slot, struct.pack("<Q", sent[0] + i),
                                                   src=2) for i in range(5000)))
                sent[0] += 5000

        t = threading.Thread(target=storm)
        t.start()
        while t.is_alive():
            t0 = time.monotonic()
            c.run(0, "true")
            answers.append(time.monotonic() - t0)
            time.sleep(0.5)
        t.join()
        wait_until(lambda: port_counters(c, 0, "W")["rx_pkts"] - rx0 > sent[0], timeout=60,
                   what="node 0 to take in the rogue's %d writes" % sent[0])
    wait_until(lambda: not sysfs_read(c, 0, "link_w").startswith("up"), timeout=30)
    irqs = irq_count(c, 0, "peach2-0") - irqs0
    print("mailbox storm: %d writes, %d interrupts on node 0; its shell answered in %s s"
          % (sent[0], irqs, " ".join("%.2f" % a for a in answers)))
    assert sent[0] > 100000, sent
    assert max(answers) < 2.0, "the storm took node 0's CPU: %s" % answers
    assert irqs < sent[0] // 100, (irqs, sent[0])
    honest_link_intact(c, b0, b1)


def test_a_peer_must_be_the_one_the_firmware_cables_there(rc):
    """With a firmware image applied, a HELLO must name the node and port its topology
    cables to that port. ring:3 cables node 0's W to node 2's E; a rogue there claiming
    node 1's E port (which no link of node 0 has) used to be taken, and under default
    routing such a claim on a port tried before the honest one attracts node 1's traffic."""
    c = rc
    check(c, 0, "echo peach2/ring-3.bin > /sys/class/peach2/peach2-0/fw_load")
    assert sysfs_read(c, 0, "fw_topology") == "ring:3"
    b0, b1 = errors(c, 0), errors(c, 1)
    with rogue(c) as r:
        r.hello(1, NODES, port="E")
        wait_until(lambda: grew(b0, errors(c, 0), "BAD_PACKET") >= 1, timeout=20,
                   what="the spoofed HELLO counted")
        assert not sysfs_read(c, 0, "link_w").startswith("up")
        rogue_up(c, r)  # the peer the firmware cables there is taken
    assert grew(b0, errors(c, 0), "BAD_PACKET") == 1
    honest_link_intact(c, b0, b1)


# The random rogue: how long it runs (make check: a few seconds; `make fuzz` sets
# PEACH2_FUZZ_SECONDS, as for the in-guest fuzzer) and its seed.
RANDOM_SECONDS = int(os.environ.get("PEACH2_FUZZ_SECONDS", "8"))
RANDOM_SEED = int(os.environ.get("PEACH2_FUZZ_SEED", "1"))


def _random_stream(r, rnd):
    """Bytes for one connection: garbage, or a HELLO and then packets whose every field
    is chosen at random, most of them well framed (so that they reach the parser's later
    checks, the router, the filter and the read proxy), some not."""
    if rnd.random() < 0.15:
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 2048)))
    w, rp, hello = hw("PEACH2_PKT_WRITE"), hw("PEACH2_PKT_RPREQ"), hw("PEACH2_PKT_HELLO")
    max_pieces = hw("PEACH2_RP_MAX_PIECES")
    out = [r.hello_packet(2, NODES) if rnd.random() < 0.9 else
           r.hello_packet(rnd.choice([0, 1, 2, 15, 99]), rnd.choice([NODES, 16, 0]),
                          port=rnd.choice("NEWS"))]

    def pick(common, *rare):
        return common if rnd.random() < 0.8 else rnd.choice(rare)

    for _ in range(rnd.randint(1, 40)):
        ptype = rnd.choice([w, w, w, rp, rp, hello, rnd.getrandbits(8)])
        dst = pick(rnd.choice([0, 1]), 2, 15, rnd.getrandbits(16))
        src = pick(2, 0, 1, 15, rnd.getrandbits(16))
        hops = pick(0, 1, 7, hw("PEACH2_PKT_HOP_LIMIT"), rnd.getrandbits(8))
        where = rnd.choice([0x1000, rnd.getrandbits(30),
                            hw("PEACH2_CARD_OFF") + hw("PEACH2_CARD_DOORBELL_OFF"),
                            hw("PEACH2_CARD_OFF") + rnd.getrandbits(16)])
        addr = pick(node_base(dst & 0xf) + where, rnd.getrandbits(64),
                    (node_base(dst & 0xf) - 4) % (1 << 64))
        if ptype == rp:
            # A READ may carry a reply list (hardware.md §9): n pieces announced in
            # operand[0], usually as many sent, each anywhere, of any length.
            listed = 0 if rnd.random() < 0.7 else pick(rnd.randint(1, max_pieces), 0,
                                                       max_pieces + 1, rnd.getrandbits(64))
            body = RP_REQ.pack(pick(hw("PEACH2_RP_OP_READ"), rnd.getrandbits(8)),
                               pick(hw("PEACH2_RP_VERSION"), rnd.getrandbits(8)),
                               src & 0xffff, rnd.choice([0, 1, 2, rnd.getrandbits(32)]),
                               rnd.getrandbits(32), rnd.choice([8, 64, 4096, rnd.getrandbits(32)]),
                               rnd.getrandbits(64), rnd.getrandbits(64), rnd.getrandbits(64),
                               rnd.getrandbits(64), listed, 0)
            if listed:
                body += b"".join(RP_PIECE.pack(pick(rnd.getrandbits(30) & ~15, rnd.getrandbits(64)),
                                               pick(4096, rnd.getrandbits(32)),
                                               pick(0, rnd.getrandbits(32)))
                                 for _ in range(pick(min(listed, max_pieces), rnd.randint(0, 70))))
            body = body[:pick(len(body), rnd.randint(0, len(body)))]
        elif ptype == hello:
            body = HELLO.pack(rnd.choice([2, 1, 15]), NODES, rnd.randint(0, 4), rnd.getrandbits(32))
        else:
            body = bytes(rnd.getrandbits(8) for _ in range(pick(rnd.randint(1, 64),
                                                               rnd.randint(0, 4200))))
        out.append(r.packet(ptype, body, src=src, dst=dst, addr=addr, hops=hops,
                            flags=pick(0, rnd.getrandbits(8)),
                            seq=pick(None, rnd.getrandbits(32)),
                            length=pick(None, rnd.getrandbits(32), len(body) + 8),
                            number=rnd.getrandbits(32)))
    return b"".join(out)


def test_random_streams_hurt_only_the_rogue(rc):
    """The rogue for a while (PEACH2_FUZZ_SECONDS): connection after connection of random
    bytes and randomly filled packets on node 0's W port. QEMU and the guests live, the
    honest link 0E-1W stays up with nothing bad arriving at node 1, the log stays bounded,
    and an honest peer is taken on W afterwards."""
    c, rnd = rc, random.Random(RANDOM_SEED)
    b0, b1 = errors(c, 0), errors(c, 1)
    size0 = os.path.getsize(qemu_log(c))
    rx0 = port_counters(c, 0, "W")["rx_bytes"]
    streams = sent = 0
    end = time.monotonic() + RANDOM_SECONDS
    while time.monotonic() < end:
        with rogue(c) as r:
            r.sock.settimeout(30)  # a card that stops reading its port fails the test
            data = _random_stream(r, rnd)
            try:
                r.send_raw(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the card dropped the stream: what it does with a bad one
            except socket.timeout:
                pytest.fail("node 0 stopped reading its W port (stream %d, seed %d)"
                            % (streams, RANDOM_SEED))
            r.drain(0.01)
        streams, sent = streams + 1, sent + len(data)
    wait_until(lambda: not sysfs_read(c, 0, "link_w").startswith("up"), timeout=30)
    rx = port_counters(c, 0, "W")["rx_bytes"] - rx0
    grown = os.path.getsize(qemu_log(c)) - size0
    after = errors(c, 0)
    print("random rogue: %d streams, %d bytes sent, node 0 took %d bytes in %d s (seed %d); "
          "errors on node 0: %s; QEMU log +%d bytes"
          % (streams, sent, rx, RANDOM_SECONDS, RANDOM_SEED,
             {k: grew(b0, after, k) for k in after if grew(b0, after, k)}, grown))
    assert streams > 0 and rx > 0
    assert grew(b0, after, "BAD_PACKET") > 0  # the garbage was seen and counted
    # Well-framed packets got past the parser to the router, the filter, the proxy.
    for deeper in ("HOP_LIMIT", "NOT_REGISTERED", "RP_BAD_PACKET"):
        assert grew(b0, after, deeper) > 0, "no %s in %d streams" % (deeper, streams)
    # Rate-limited: 10 lines per 5 s per level, ~200 bytes each, plus the summaries.
    assert grown < 8192 + 1000 * RANDOM_SECONDS, "QEMU log grew by %d bytes" % grown
    honest_link_intact(c, b0, b1)
    (rc_s, out_s), (rc_r, out_r) = c.run_all(
        lambda i: ("tca_check pio send --peer 1 --offsets 0 --sizes 8,4096" if i == 0
                   else "tca_check pio recv --peer 0"), timeout=300)
    assert rc_s == 0 and rc_r == 0, out_s + out_r
    with rogue(c) as r:  # and the port still takes an honest peer
        rogue_up(c, r)
