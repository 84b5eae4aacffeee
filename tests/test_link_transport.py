"""The two link transports (issue 13): shared memory between QEMUs of one host (the
default for unix-socket cables) and the socket itself (cables between hosts, forced
with link_transport="socket" / cluster.py --link-transport socket).

The rest of the VM suite runs on the default transport; here the same libtca checks
(PIO, DMA, get, stamped-write ordering) run once with the socket forced, two ends that
disagree are shown to agree on the socket (a mixed ring, with multi-hop traffic over both
transports), and the shared-memory path is shown to refuse writes outside registered
buffers, keep order, and survive a peer killed in the middle of a PIO stream and of a
DMA stream. On shared memory the cards also write straight into their neighbours' RAM
(direct writes): shown to carry PIO, DMA and get with the counters of both cards agreeing,
forced off with link_transport="shm-ring", and a peer that holds a direct write is dropped
(one that finishes it late is waited for).
"""

import fcntl
import mmap
import os
import re
import socket
import struct
import threading
import time

import pytest

from peach2_testlib import check, cluster_mod, rp_pair, sysfs_read, wait_sysfs, wait_until

link_socket_path = cluster_mod.link_socket_path

pytestmark = pytest.mark.vm

SHM_LINE = re.compile(r"peach2 node (\d+): port (\d+) uses the shared-memory transport")


def shm_ports(c, node):
    """How many connections of a node's card went through shared memory (its QEMU log,
    where the card says so for every connection)."""
    n = 0
    for name in os.listdir(c.run_dir):
        if name.startswith("qemu-%d." % node) and name.endswith(".log"):
            with open(os.path.join(c.run_dir, name), encoding="utf-8", errors="replace") as f:
                n += len(SHM_LINE.findall(f.read()))
    return n


def rx_bytes(c, node, port):
    m = re.search(r"^%s .*rx_bytes=(\d+)" % port, sysfs_read(c, node, "counters"), re.M)
    return int(m.group(1)) if m else 0


def transports(c, node):
    """The driver's view of how each cable's bytes travel: {"E": "shm direct", "W":
    "socket", "S": "none"} (sysfs link_transport, from LINK_x.SHM and .DIRECT)."""
    return dict(line.split(None, 1) for line in
                sysfs_read(c, node, "link_transport").splitlines())


def on_shm(how):
    """Shared memory, with or without direct writes."""
    return how in ("shm", "shm direct")


def order_pair(c, sender, receiver, count=5000):
    """A stream of stamped writes, issued without waiting, lands in order."""
    cmds = {receiver: "tca_check pio order-recv --peer %d --count %d" % (sender, count),
            sender: "tca_check pio order-send --peer %d --count %d" % (receiver, count)}
    res = c.run_all(lambda i: cmds[i], timeout=600, nodes=[sender, receiver])
    for rc, out in res:
        assert rc == 0, out
    assert "arrived in order" in res[1][1], res


def refused(c, node):
    m = re.search(r"NOT_REGISTERED\D*(\d+)", sysfs_read(c, node, "errors_by_code"))
    return int(m.group(1)) if m else 0


def pio_pair(c, sender, receiver):
    cmds = {receiver: "tca_check pio recv --peer %d --size 16384 --guard 4096" % sender,
            sender: "tca_check pio send --peer %d --offsets 0,3,-1 --sizes 1,8,13,4096,4097"
                    % receiver}
    res = c.run_all(lambda i: cmds[i], timeout=600, nodes=[sender, receiver])
    for rc, out in res:
        assert rc == 0, out
    assert "PASS" in res[1][1].strip().splitlines()[-1], res[1][1]


def dma_pair(c, sender, receiver, count=5):
    cmds = {receiver: "tca_check dma recv --peer %d" % sender,
            sender: "tca_check dma send --peer %d --count %d" % (receiver, count)}
    res = c.run_all(lambda i: cmds[i], timeout=600, nodes=[sender, receiver])
    for rc, out in res:
        assert rc == 0, out
    assert "PASS" in res[1][1].strip().splitlines()[-1], res[1][1]


@pytest.fixture(scope="module")
def socket2(make_cluster):
    return make_cluster(2, link_transport="socket")


def test_socket_transport_is_used_when_forced(socket2):
    assert shm_ports(socket2, 0) == 0 and shm_ports(socket2, 1) == 0
    wait_sysfs(socket2, 0, "link_e", lambda v: v.startswith("up"))
    assert transports(socket2, 0) == {"E": "socket", "W": "none", "S": "none"}
    assert transports(socket2, 1)["W"] == "socket"


def pio_dma_get(c):
    """PIO both ways, DMA 0 -> 1, gets by node 0 from node 1, every byte checked."""
    pio_pair(c, 0, 1)
    pio_pair(c, 1, 0)
    dma_pair(c, 0, 1)
    rc_s, out_s, rc_c, out_c = rp_pair(c, 1, 0, "--counter --seed 5",
                                       "get-verify --seed 5 --iters 30 --max-len 256K")
    assert rc_s == 0 and rc_c == 0, out_s + out_c
    assert " 0 mismatches, 0 errors" in out_c, out_c


def test_socket_transport_pio_dma_get(socket2):
    pio_dma_get(socket2)
    order_pair(socket2, 0, 1)


def test_default_transport_is_shared_memory(cluster2):
    if cluster2.link_transport != "shm":
        pytest.skip("the suite runs with PEACH2_LINK_TRANSPORT=%s" % cluster2.link_transport)
    assert shm_ports(cluster2, 0) >= 1 and shm_ports(cluster2, 1) >= 1
    assert transports(cluster2, 0)["E"] == "shm direct"
    assert transports(cluster2, 1)["W"] == "shm direct"


def test_ends_that_disagree_use_the_socket(make_cluster):
    """ring:4 with link-shm off on node 1 only: its two cables agree on the socket (no
    dropped link), the other two use shared memory, and two-hop traffic crosses both
    (0 -> 2 through node 1 over sockets, 2 -> 0 through node 3 over shared memory),
    counted by the intermediate cards."""
    c = make_cluster(None, topology="ring:4", link_transport="shm",
                     device_props=lambda i: {"link-shm": "off"} if i == 1 else None)
    for i in range(4):
        wait_sysfs(c, i, "link_e", lambda v: v.startswith("up"), timeout=30)
    assert transports(c, 0)["E"] == "socket" and transports(c, 1) == {
        "E": "socket", "W": "socket", "S": "none"}
    assert transports(c, 2)["W"] == "socket"
    assert transports(c, 2)["E"] == "shm direct" and transports(c, 3)["E"] == "shm direct"
    assert transports(c, 0)["W"] == "shm direct"
    assert "port 1 uses the socket transport (the peer did not offer" in qemu_log(c, 0)
    assert "shared-memory link" not in qemu_log(c, 0) + qemu_log(c, 2), "a link was dropped"
    for via, sender, receiver in ((1, 0, 2), (3, 2, 0)):
        before = rx_bytes(c, via, "W")  # each intermediate hears the sender on W
        order_pair(c, sender, receiver, count=1000)
        assert rx_bytes(c, via, "W") > before + 1000 * 64, "node %d forwarded nothing" % via


def test_shm_refuses_writes_outside_registered_buffers(shm2):
    """The inbound filter on the shared-memory path: a store to node 1's memory that is no
    buffer is refused whole and counted NOT_REGISTERED, as on the socket."""
    assert on_shm(transports(shm2, 0)["E"])
    before = refused(shm2, 1)
    check(shm2, 0, "tca_check pio raw --node 1 --offset 0x1000")
    wait_until(lambda: refused(shm2, 1) > before, timeout=10, what="NOT_REGISTERED on node 1")


def test_shm_stamped_writes_arrive_in_order(shm2):
    order_pair(shm2, 0, 1, count=20000)
    order_pair(shm2, 1, 0)


@pytest.fixture(scope="module")
def shm2(make_cluster):
    return make_cluster(2, link_transport="shm")


@pytest.mark.parametrize("stream", ["pio", "dma"])
def test_shm_peer_killed_mid_stream_and_restarted(shm2, stream):
    """Node 1 dies while node 0 streams into it through shared memory: node 0's QEMU
    lives on, its link goes down, its guest answers; after a restart traffic resumes
    (and again through shared memory)."""
    c = shm2
    before = shm_ports(c, 0)
    if stream == "pio":
        # Stamped writes until killed (one 64-byte slot and a stamp each): long enough
        # at any speed (the placement check of `pio send` is over in a few seconds).
        recv = "tca_check pio order-recv --peer 0 --count 1000000000"
        send = "tca_check pio order-send --peer 1 --count 1000000000"
    else:
        recv = "tca_check dma recv --peer 0"
        send = "tca_check dma send --peer 1 --count 200"
    check(c, 1, "(%s >/tmp/recv.log 2>&1 &)" % recv)
    check(c, 0, "(%s >/tmp/send.log 2>&1 &)" % send)
    start = rx_bytes(c, 1, "W")
    wait_until(lambda: rx_bytes(c, 1, "W") > start + 65536, timeout=60,
               what="node 0's stream to reach node 1")
    c.kill_node(1)
    wait_sysfs(c, 0, "link_e", "down", timeout=15)
    assert c.nodes[0].alive(), "node 0's QEMU died with its peer"
    # The sender would go on writing into whatever node 1 registers next.
    check(c, 0, "killall tca_check; true", timeout=30)
    wait_until(lambda: c.run(0, "pidof tca_check")[0] != 0, timeout=30,
               what="node 0's sender to end")
    c.restart_node(1)
    wait_sysfs(c, 0, "link_e", lambda v: v.startswith("up"), timeout=30)
    assert shm_ports(c, 0) > before, "the new connection did not use shared memory"
    pio_pair(c, 0, 1)
    dma_pair(c, 0, 1, count=3)


# ---- direct writes -----------------------------------------------------------------


def link_counters(c, node, port):
    """{"tx_pkts": .., "tx_bytes": .., "rx_pkts": .., "rx_bytes": ..} of one port."""
    m = re.search(r"^%s (.*)$" % port, sysfs_read(c, node, "counters"), re.M)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


def test_direct_writes_carry_pio_dma_and_get(shm2):
    """The default: stores, DMA and the read proxy's answers land in the peer's RAM from
    the sender's QEMU; both cards count them as the packets they replace."""
    assert transports(shm2, 0)["E"] == "shm direct" and transports(shm2, 1)["W"] == "shm direct"
    before = shm2.direct_state(0)["E"]
    assert before["on"] == 1, before
    tx0, rx0 = link_counters(shm2, 0, "E"), link_counters(shm2, 1, "W")
    pio_dma_get(shm2)
    d0, d1 = shm2.direct_state(0)["E"], shm2.direct_state(1)["W"]
    assert d0["sent"] > before["sent"] + 100, (before, d0)
    assert d0["sent"] == d1["received"] and d0["sent_bytes"] == d1["received_bytes"], (d0, d1)
    assert d1["sent"] > 0 and d1["sent"] == d0["received"], (d0, d1)  # answers, 1 -> 0
    # Every write counted once on each side, whichever way it went (node 1 may have
    # been restarted by an earlier test: compare what this test added).
    tx, rx = link_counters(shm2, 0, "E"), link_counters(shm2, 1, "W")
    for k in ("pkts", "bytes"):
        assert tx["tx_" + k] - tx0["tx_" + k] == rx["rx_" + k] - rx0["rx_" + k], (tx0, tx, rx0, rx)


def test_shm_ring_without_direct_writes(make_cluster):
    """link_transport="shm-ring": the rings carry everything, no direct write is made."""
    c = make_cluster(2, link_transport="shm-ring")
    assert transports(c, 0)["E"] == "shm" and transports(c, 1)["W"] == "shm"
    pio_pair(c, 0, 1)
    order_pair(c, 1, 0, count=2000)
    assert c.direct_state(0)["E"] == {"on": 0, "sent": 0, "sent_bytes": 0, "received": 0,
                                      "received_bytes": 0}
    c.stop()


# ---- a rogue peer on the shared-memory transport ---------------------------------

OFFER_MAGIC = 0x32764d4853325050  # "PP2SHMv2" (qemu-device/qemu/peach2.c)
RING_MAGIC, RING_HEADER, HEAD_OFF = 0x52534850, 256, 64  # peach2_shm_ring.h, shm_ring.cc


def rogue_connect(path, ring=4096, claim=None, seal=True, keep_direct=False):
    """Connect to a card's listening cable as its peer would and make the offer: our ring
    (a memfd we keep writing to), our eventfd. Returns (socket, our ring's mmap, our
    eventfd, the card's wake-up eventfd) once the card's own offer arrived; with
    keep_direct also the card's RAM and direct-area descriptors (a list, empty if the
    card offered none)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(path)
    fd = os.memfd_create("rogue", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, RING_HEADER + ring)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    mm = mmap.mmap(fd, RING_HEADER + ring)
    struct.pack_into("<IIQ", mm, 0, RING_MAGIC, 1, ring)
    efd = os.eventfd(0, os.EFD_NONBLOCK)
    socket.send_fds(s, [struct.pack("<QQ", OFFER_MAGIC, claim or ring)], [fd, efd])
    os.close(fd)
    got = b""
    fds = []
    while len(got) < 16:
        data, more, _, _ = socket.recv_fds(s, 16 - len(got), 4)
        assert data, "the card closed the cable before its offer"
        got += data
        fds += more
    # Ring and eventfd; the card's RAM and direct area too (we run as its user).
    assert struct.unpack("<Q", got[:8])[0] == OFFER_MAGIC and len(fds) in (2, 4), got
    os.close(fds[0])
    if keep_direct:
        return s, mm, efd, fds[1], fds[2:]
    for fd in fds[2:]:
        os.close(fd)
    return s, mm, efd, fds[1]


def qemu_log(c, node):
    with open(os.path.join(c.run_dir, "qemu-%d.log" % node), encoding="utf-8",
              errors="replace") as f:
        return f.read()


@pytest.mark.parametrize("rogue", ["index out of range", "garbage bytes", "unsealed ring",
                                   "size lie"])
def test_shm_rogue_peer_is_dropped_not_fatal(shm2, rogue):
    """Something else on node 1's end of the cable breaks the shared-memory rules: node 0
    drops the connection with a message, its QEMU and guest live on, and the real node 1
    reconnects afterwards."""
    c = shm2
    c.kill_node(1)
    wait_sysfs(c, 0, "link_e", "down", timeout=15)
    path = link_socket_path(c.run_dir, 0, "E")
    log_before = len(qemu_log(c, 0))
    errors_before = int(sysfs_read(c, 0, "err_count"))
    s, mm, efd, card_wake = rogue_connect(
        path, seal=rogue != "unsealed ring", claim=1 << 20 if rogue == "size lie" else None)
    try:
        if rogue == "index out of range":
            struct.pack_into("<Q", mm, HEAD_OFF, 1 << 62)
        elif rogue == "garbage bytes":
            mm[RING_HEADER:RING_HEADER + 4096] = bytes(range(256)) * 16
            struct.pack_into("<Q", mm, HEAD_OFF, 4096)
        os.write(card_wake, struct.pack("<Q", 1))
        wait_until(lambda: s.recv(1) == b"", timeout=15, what="node 0 to drop the rogue")
    finally:
        s.close()
        mm.close()
        os.close(efd)
        os.close(card_wake)
    # Visible: the transport's refusal on QEMU's stderr, or the card's BAD_PACKET count
    # when the ring was fine and its bytes were not.
    log = qemu_log(c, 0)[log_before:]
    if rogue == "garbage bytes":
        assert int(sysfs_read(c, 0, "err_count")) > errors_before
    else:
        assert "shared-memory link" in log and "dropping the connection" in log, log
    assert c.nodes[0].alive(), "node 0's QEMU died"
    check(c, 0, "true")
    c.restart_node(1)
    wait_sysfs(c, 0, "link_e", lambda v: v.startswith("up"), timeout=30)
    pio_pair(c, 0, 1)


class DirectHolder:
    """Node 1 killed and a rogue in its place on node 0's E cable, with node 0's direct
    area mapped: it announces a direct write under the area's generation (offset 64,
    `writer`) and makes none, as a writer whose thread the host does not run would."""

    def __init__(self, c):
        self.c = c
        c.kill_node(1)
        wait_sysfs(c, 0, "link_e", "down", timeout=15)
        self.s, self.mm, self.efd, self.card_wake, extra = rogue_connect(
            link_socket_path(c.run_dir, 0, "E"), keep_direct=True)
        self.area = None
        assert extra, "node 0 offered no direct area to a peer of its own user"
        ram_fd, area_fd = extra
        os.close(ram_fd)
        self.area = mmap.mmap(area_fd, 0)
        os.close(area_fd)
        gen = self.gen()
        assert gen % 2 == 0, gen
        struct.pack_into("<Q", self.area, 64, gen)  # "writing under gen"

    def gen(self):
        return struct.unpack_from("<Q", self.area, 8)[0]

    def release(self):
        struct.pack_into("<Q", self.area, 64, 0)

    def change_filter(self):
        """A buffer registered on node 0: its inbound filter changes."""
        check(self.c, 0, "tca_check pio recv --peer 1 --size 4096 --guard 0 "
              "--exchange-timeout-ms 1000; true", timeout=60)

    def close(self):
        """Closes the rogue's end; node 1 back, PIO between them again."""
        self.s.close()
        self.mm.close()
        if self.area is not None:
            self.area.close()
        os.close(self.efd)
        os.close(self.card_wake)
        c = self.c
        assert c.nodes[0].alive(), "node 0's QEMU died"
        check(c, 0, "true")
        c.restart_node(1)
        wait_sysfs(c, 0, "link_e", lambda v: v.startswith("up"), timeout=30)
        pio_pair(c, 0, 1)


def test_peer_slow_to_finish_a_direct_write_keeps_its_link(shm2):
    """A peer whose direct write ends 50 ms late (a host with more guests than CPUs may
    not run its thread for that long): node 0's filter change waits for it and the cable
    stays up. Until e14d03b the card gave up after 20 ms and dropped the link (ring:8 on 2
    cores lost links that way). Not later: the card gives up at 250 ms, and this test's
    own thread, on a loaded host, may run late too."""
    h = DirectHolder(shm2)
    try:
        waited = threading.Event()

        def release_late():
            # The card makes the generation odd at the filter change, then waits.
            deadline = time.monotonic() + 60
            while h.gen() % 2 == 0 and time.monotonic() < deadline:
                time.sleep(0.0005)
            if h.gen() % 2:
                time.sleep(0.05)
                waited.set()
            h.release()

        t = threading.Thread(target=release_late, daemon=True)
        t.start()
        h.change_filter()
        t.join(70)
        assert waited.is_set(), "node 0's filter change never waited for the writer"
        h.s.settimeout(3)
        with pytest.raises(socket.timeout):
            h.s.recv(1)  # still connected: the card closes the socket when it drops us
        assert "held a direct write" not in qemu_log(shm2, 0)
    finally:
        h.close()


def test_peer_holding_a_direct_write_is_dropped(shm2):
    """A peer that announces a direct write and never finishes it: node 0's card waits at
    most 250 ms when its inbound filter changes, then drops that link; its guest goes on.
    The peer, back at once, gets no direct area (it could hold again): the cable's ban
    lasts 10 s at the first offence. Then the real node 1 reconnects. (Last in the file:
    QEMU says the first three transport failures of a port, then every 100th ("held a
    direct write over 250 ms; no direct writes into this node on this cable for 10 s"),
    and the rogue tests above count on seeing theirs; this one's is not among them.)"""
    h = DirectHolder(shm2)
    try:
        # Holding alone costs nothing: the cable stays up while the filter stays.
        h.s.settimeout(3)
        with pytest.raises(socket.timeout):
            h.s.recv(1)
        h.change_filter()
        h.s.settimeout(20)
        wait_until(lambda: h.s.recv(1) == b"", timeout=15, what="node 0 to drop the holder")
        s, mm, efd, wake, extra = rogue_connect(link_socket_path(shm2.run_dir, 0, "E"),
                                                keep_direct=True)
        try:
            assert extra == [], "node 0 offered its RAM again to the peer that held a write"
        finally:
            for fd in extra + [efd, wake]:
                os.close(fd)
            s.close()
            mm.close()
    finally:
        h.close()


def test_shm_lost_wakeups_are_made_up_by_the_watchdog(shm2):
    """Node 1 loses every wake-up of its W port (`deaf W`): node 0's packets sit in the
    ring until node 1's watchdog moves them (every 20 ms). PIO, DMA and gets still work,
    every byte checked; the fault state counts the bytes the watchdog moved, and QEMU's
    stderr says a wake-up went missing. `hear W` ends it."""
    c = shm2
    assert on_shm(transports(c, 1)["W"])
    before = c.fault_state(1)["W"]["late_wakeups"]
    c.fault(1, "deaf", "W")
    try:
        assert c.fault_state(1)["W"]["deaf"] == 1
        pio_pair(c, 0, 1)
        dma_pair(c, 0, 1, count=3)
        # Requests to node 1's read proxy are packets (direct writes carry only host
        # memory), answered by node 1 once its watchdog (or its driver's look) reads them.
        rc_s, out_s, rc_c, out_c = rp_pair(c, 1, 0, "--seed 7",
                                           "get-verify --seed 7 --max-len 64 --iters 50")
        assert rc_s == 0 and rc_c == 0, out_s + out_c
        assert re.search(r"get-verify: 50 gets, \d+ bytes, 0 mismatches, 0 errors", out_c), out_c
        late = c.fault_state(1)["W"]["late_wakeups"]
    finally:
        c.fault(1, "hear", "W")
    assert c.fault_state(1)["W"]["deaf"] == 0
    assert late > before, (before, late)
    said = c.qemu_stderr(1, 200000)
    assert re.search(r"peach2 node 1 port 2: \d+ bytes waited over 20 ms in the "
                     r"shared-memory link with no wake-up; moved by its watchdog", said), said
    pio_pair(c, 0, 1)  # heard again
