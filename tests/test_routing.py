"""Multi-hop routing from firmware on a 4-node ring (issue: routing and firmware).

The cluster is booted with --topology ring:4: the guests load
/lib/firmware/peach2/ring-4.bin, so every card routes by the table of the
firmware and forwards packets for other nodes; the guests take no part in it.
"""

import re

import pytest

from peach2_testlib import check, rp_pair, sysfs_read, wait_sysfs, wait_until

pytestmark = pytest.mark.vm

TOPO = "ring:4"
N = 4
UNREGISTERED = 0x1000  # bus address that is no buffer: the target card refuses it


def hops(a, b):
    d = (b - a) % N
    return min(d, N - d)


@pytest.fixture(scope="module")
def ring4(make_cluster):
    return make_cluster(None, topology=TOPO)


def link_tx_total(c):
    """Sum of packets every card sent on its E/W/S links."""
    total = 0
    for i in range(N):
        for line in sysfs_read(c, i, "counters").splitlines():
            port, rest = line.split(" ", 1)
            if port in ("E", "W", "S"):
                total += int(re.search(r"tx_pkts=(\d+)", rest).group(1))
    return total


def refused(c, node):
    for line in sysfs_read(c, node, "errors_by_code").splitlines():
        if "NOT_REGISTERED" in line:
            return int(line.split()[-1])
    return 0


def test_every_card_applied_the_firmware(ring4):
    for i in range(N):
        assert sysfs_read(ring4, i, "fw_status") == "ok"
        assert sysfs_read(ring4, i, "fw_topology") == TOPO
        assert int(sysfs_read(ring4, i, "fw_routes")) >= 3
        wait_sysfs(ring4, i, "link_e", lambda v: v.startswith("up"))
        wait_sysfs(ring4, i, "link_w", lambda v: v.startswith("up"))


def test_all_12_pairs_cross_the_expected_number_of_links(ring4):
    """One 8-byte store per ordered pair, aimed at memory that is no buffer: the
    target card counts it (so it arrived at the right node), and the cards
    together sent it over exactly hops(a, b) links (so it was forwarded)."""
    for a in range(N):
        for b in range(N):
            if a == b:
                continue
            before_tx, before_ref = link_tx_total(ring4), refused(ring4, b)
            check(ring4, a, "tca_check pio raw --node %d --offset %d" % (b, UNREGISTERED))
            wait_until(lambda: refused(ring4, b) > before_ref, timeout=10,
                       what="node %d to count the store from node %d" % (b, a))
            assert link_tx_total(ring4) - before_tx == hops(a, b), "%d -> %d" % (a, b)


@pytest.mark.parametrize("sender,receiver", [(0, 2), (3, 1)])
def test_pio_data_intact_over_two_hops(ring4, sender, receiver):
    cmds = {receiver: "tca_check pio recv --peer %d --size 8192" % sender,
            sender: "tca_check pio send --peer %d --offsets 0,3,-9 --sizes 1,7,8,255,4096" % receiver}
    res = ring4.run_all(lambda i: cmds[i], nodes=[sender, receiver], timeout=300)
    for rc, out in res:
        assert rc == 0, out


def test_bad_firmware_is_refused_and_holds_links_down(ring4):
    node = 3
    # A corrupt copy (one byte flipped) and an image for another topology.
    check(ring4, node, "cp /lib/firmware/peach2/ring-4.bin /lib/firmware/peach2/bad.bin && "
                       "printf '\\377' | dd of=/lib/firmware/peach2/bad.bin bs=1 seek=100 conv=notrunc 2>/dev/null")
    rc, out = ring4.run(node, "echo peach2/bad.bin > /sys/class/peach2/peach2-0/fw_load")
    assert rc != 0, "loading a corrupt image must fail"
    assert sysfs_read(ring4, node, "fw_status") == "bad-crc"
    assert not sysfs_read(ring4, node, "link_e").startswith("up")  # held: "connected"
    assert "refused by the card" in check(ring4, node, "dmesg | tail -5")
    rc, out = ring4.run(node, "echo peach2/ring-8.bin > /sys/class/peach2/peach2-0/fw_load")
    assert rc != 0
    assert sysfs_read(ring4, node, "fw_status") == "wrong-topology"
    rc, out = ring4.run(node, "echo peach2/missing.bin > /sys/class/peach2/peach2-0/fw_load")
    assert rc != 0
    # A good image brings the node back.
    check(ring4, node, "echo peach2/ring-4.bin > /sys/class/peach2/peach2-0/fw_load")
    assert sysfs_read(ring4, node, "fw_status") == "ok"
    wait_sysfs(ring4, node, "link_e", lambda v: v.startswith("up"))
    before = refused(ring4, 1)
    check(ring4, node, "tca_check pio raw --node 1 --offset %d" % UNREGISTERED)
    wait_until(lambda: refused(ring4, 1) > before, timeout=10, what="traffic after reload")


def test_peer_killed_and_restarted(ring4):
    ring4.kill_node(1)
    wait_sysfs(ring4, 0, "link_e", "down", timeout=15)
    wait_sysfs(ring4, 2, "link_w", "down", timeout=15)
    # Node 0 -> node 2 goes E through node 1: refused as LINK_DOWN, not hung.
    before = int(sysfs_read(ring4, 0, "err_count"))
    check(ring4, 0, "tca_check pio raw --node 2 --offset %d" % UNREGISTERED)
    wait_until(lambda: int(sysfs_read(ring4, 0, "err_count")) > before, timeout=10,
               what="node 0 to count the store it could not route")
    assert "LINK_DOWN" in sysfs_read(ring4, 0, "errors_by_code")
    ring4.restart_node(1)
    wait_sysfs(ring4, 0, "link_e", lambda v: v.startswith("up"), timeout=30)
    wait_sysfs(ring4, 2, "link_w", lambda v: v.startswith("up"), timeout=30)
    assert sysfs_read(ring4, 1, "fw_status") == "ok"
    before = refused(ring4, 2)
    check(ring4, 0, "tca_check pio raw --node 2 --offset %d" % UNREGISTERED)
    wait_until(lambda: refused(ring4, 2) > before, timeout=10, what="traffic through the restarted node")


@pytest.mark.parametrize("sender,receiver", [(0, 2), (1, 3)])
def test_dma_data_intact_over_two_hops(ring4, sender, receiver):
    """DMA (random sizes, offsets, strides; every transfer checksummed by the
    receiver) between nodes two cables apart: the middle card forwards."""
    cmds = {receiver: "tca_check dma recv --peer %d" % sender,
            sender: "tca_check dma send --peer %d --count 10" % receiver}
    res = ring4.run_all(lambda i: cmds[i], nodes=[sender, receiver], timeout=600)
    for rc, out in res:
        assert rc == 0, out
    assert "PASS" in res[1][1].strip().splitlines()[-1], res[1][1]


def test_read_proxy_over_two_hops(ring4):
    """Gets and FAAs between nodes two cables apart: the request (RPREQ) and the
    reply are forwarded by the middle card, which keeps the true source node."""
    rc_s, out_s, rc_c, out_c = rp_pair(ring4, 0, 2, "--counter --seed 21",
                                       "get-verify --seed 21 --iters 40 --max-len 256K")
    assert rc_s == 0 and rc_c == 0, out_s + out_c
    assert " 0 mismatches, 0 errors" in out_c, out_c
    rc_s, out_s, rc_c, out_c = rp_pair(ring4, 0, 2, "--counter --seed 22", "faa --seed 22 --count 50")
    assert rc_s == 0 and rc_c == 0, out_s + out_c
    assert "counter=50" in out_s, out_s
    # Node 2's requests reached node 0's ring stamped as node 2's: the middle
    # node's card only forwarded them.
    mid = sysfs_read(ring4, 1, "rproxy")
    assert re.search(r"^card_rx_queued 0$", mid, re.M), mid


def test_tcp_cables(make_cluster):
    """The same cards cabled over loopback TCP instead of unix sockets."""
    c = make_cluster(None, topology="ring:3", transport="tcp")
    for i in range(3):
        assert sysfs_read(c, i, "fw_status") == "ok"
        wait_sysfs(c, i, "link_e", lambda v: v.startswith("up"))
    before = refused(c, 2)
    check(c, 0, "tca_check pio raw --node 2 --offset %d" % UNREGISTERED)
    wait_until(lambda: refused(c, 2) > before, timeout=10, what="a store over TCP")
