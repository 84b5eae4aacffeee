"""VM tests of peach2-info (userlib/tools/info) and of the cluster status view
(Cluster.status(), scripts/cluster.py --status).

One cluster per topology: the session's 2-node Debian cluster, a ring:4 of busybox guests
(so both guests' images are covered), and two 1-node busybox guests (no card; a card whose
driver goes away).
"""

import json
import os
import re
import threading
import time

import pytest

from info_schema import validate
from peach2_testlib import check, cluster_mod, hw, sysfs_read, wait_until

pytestmark = pytest.mark.vm

EXIT_OK, EXIT_NO_CARD, EXIT_NO_DRIVER = 0, 2, 3   # userlib/tools/info/README.md


@pytest.fixture(scope="module")
def ring4(make_cluster):
    return make_cluster(None, topology="ring:4", guest="busybox")


def info_json(c, node, args=""):
    rc, out = c.run(node, "peach2-info --json %s 2>/dev/null" % args)
    return rc, json.loads(out)


def lspci_view(c, node, addr):
    """(ids, BARs {index: (base, size text)}, MSI-X count, driver) as lspci shows them."""
    ids = check(c, node, "lspci -n -s %s" % addr).split()
    vv = check(c, node, "lspci -vv -s %s" % addr)
    bars = {}
    for m in re.finditer(r"Region (\d+): Memory at ([0-9a-f]+) \(([^)]*)\) \[size=(\w+)\]", vv):
        bars[int(m.group(1))] = (int(m.group(2), 16), m.group(4))
    msix = re.search(r"MSI-X: Enable([+-]) Count=(\d+)", vv)
    drv = re.search(r"Kernel driver in use: (\S+)", vv)
    return ids, bars, msix, drv.group(1) if drv else None


def size_text(n):
    for unit in "KMGT":
        n //= 1024
        if n < 1024:
            return "%d%s" % (n, unit)
    return str(n)


def check_node_matches_sysfs_and_lspci(c, node):
    rc, doc = info_json(c, node)
    assert rc == EXIT_OK, doc
    validate(doc)
    assert doc["status"] == "ok" and doc["message"] == ""
    assert len(doc["cards"]) == 1
    pci, d = doc["cards"][0]["pci"], doc["cards"][0]["driver"]
    # lspci -n: "00:03.0 0280: 1234:7ca2 (rev 01)"
    ids, bars, msix, drv = lspci_view(c, node, pci["address"])
    assert ids[1] == "%s:" % pci["class"]
    assert ids[2] == "%s:%s" % (pci["vendor"], pci["device"])
    assert ids[3:] == ["(rev", "%s)" % pci["revision"]]
    assert int(pci["vendor"], 16) == hw("PEACH2_PCI_VENDOR_ID")
    assert int(pci["device"], 16) == hw("PEACH2_PCI_DEVICE_ID")
    assert {b["index"]: (b["base"], size_text(b["size"])) for b in pci["bars"]} == bars
    sizes = {b["index"]: b["size"] for b in pci["bars"]}
    assert sizes[hw("PEACH2_BAR_REGS")] == hw("PEACH2_REGS_SIZE")
    assert sizes[hw("PEACH2_BAR_CARDMEM")] == hw("PEACH2_CARDMEM_SIZE")
    assert msix and pci["msix"] == {"vectors": int(msix.group(2)), "enabled": msix.group(1) == "+"}
    assert pci["msix"]["vectors"] == hw("PEACH2_MSIX_VECTORS")
    assert pci["driver"] == drv == "peach2"
    # The driver's view, attribute by attribute.
    assert d["device"] == "peach2-0" and d["sysfs"].endswith("/peach2/peach2-0")
    assert d["node_id"] == int(sysfs_read(c, node, "node_id")) == node
    assert d["node_count"] == int(sysfs_read(c, node, "node_count")) == c.n
    assert d["hw_version"] == sysfs_read(c, node, "hw_version")
    fw = d["firmware"]
    assert fw["status"] == sysfs_read(c, node, "fw_status")
    assert fw["topology"] == sysfs_read(c, node, "fw_topology")
    assert fw["routes"] == int(sysfs_read(c, node, "fw_routes"))
    for p in d["ports"][1:]:
        text = sysfs_read(c, node, "link_" + p["port"].lower())
        want = p["link"] if p["link"] != "up" else "up peer=%d port=%s" % (p["peer_node"],
                                                                          p["peer_port"])
        assert text == want, (node, p)
    # Counters only grow: what peach2-info read is <= what sysfs says a moment later.
    later = {}
    for line in sysfs_read(c, node, "counters").splitlines():
        w = line.split()
        later[w[0]] = {k: int(v) for k, v in (x.split("=") for x in w[1:])}
    for p in d["ports"]:
        for k in ("tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes"):
            assert p[k] <= later[p["port"]][k], (node, p["port"], k)
    names = [ln.split()[1] for ln in sysfs_read(c, node, "errors_by_code").splitlines()]
    assert set(e["name"] for e in d["errors"]["by_code"]) <= set(names) | {"NONE"}
    assert d["read_proxy"]["ring_entries"] == int(
        dict(l.split() for l in sysfs_read(c, node, "rproxy").splitlines())["ring_entries"])
    # The text output says the same.
    text = check(c, node, "peach2-info")
    assert "peach2-0: PEACH2 at %s [%s:%s]" % (pci["address"], pci["vendor"], pci["device"]) in text
    assert "node %d of %d" % (node, c.n) in text
    for p in d["ports"][1:]:
        if p["link"] == "up":
            assert "up, node %d port %s" % (p["peer_node"], p["peer_port"]) in text
    verbose = check(c, node, "peach2-info -v")
    assert "card_tx_sent=" in verbose and "DMA ch3:" in verbose
    return doc


def test_two_nodes_match_sysfs_and_lspci(cluster2):
    docs = [check_node_matches_sysfs_and_lspci(cluster2, i) for i in range(2)]
    e0 = docs[0]["cards"][0]["driver"]["ports"][1]
    assert (e0["link"], e0["peer_node"], e0["peer_port"]) == ("up", 1, "W")


def test_ring4_matches_sysfs_and_lspci(ring4):
    for i in range(4):
        doc = check_node_matches_sysfs_and_lspci(ring4, i)
        ports = {p["port"]: p for p in doc["cards"][0]["driver"]["ports"]}
        assert (ports["E"]["link"], ports["E"]["peer_node"], ports["E"]["peer_port"]) == \
            ("up", (i + 1) % 4, "W")
        assert doc["cards"][0]["driver"]["firmware"]["topology"] == "ring:4"


def test_no_card(make_cluster):
    c = make_cluster(1, with_device=False, guest="busybox")
    rc, out = c.run(0, "peach2-info")
    assert rc == EXIT_NO_CARD, out
    assert "peach2-info: no PEACH2 card found (no PCI device 1234:7ca2)" in out
    rc, doc = info_json(c, 0)
    assert rc == EXIT_NO_CARD
    validate(doc)
    assert doc["status"] == "no-card" and doc["cards"] == []


def test_driver_unbound_then_unloaded(make_cluster):
    c = make_cluster(1, guest="busybox")
    rc, doc = info_json(c, 0)
    assert rc == EXIT_OK
    addr = doc["cards"][0]["pci"]["address"]
    assert [p["link"] for p in doc["cards"][0]["driver"]["ports"]] == ["host", "down", "down",
                                                                      "down"]
    check(c, 0, "echo %s > /sys/bus/pci/drivers/peach2/unbind" % addr)
    rc, out = c.run(0, "peach2-info")
    assert rc == EXIT_NO_DRIVER, out
    assert ("peach2-info: the peach2 driver is loaded but not bound to %s: PCI view only"
            % addr) in out
    assert "card: PEACH2 at %s [1234:7ca2] rev 01, no driver bound" % addr in out
    assert "driver state: unavailable (PCI view only)" in out
    assert "MSI-X: 8 vectors, disabled" in out
    rc, doc = info_json(c, 0)
    assert rc == EXIT_NO_DRIVER
    validate(doc)
    assert doc["status"] == "no-driver" and doc["driver_loaded"] is True
    card = doc["cards"][0]
    assert card["driver"] is None and card["pci"]["driver"] is None
    assert card["pci"]["msix"] == {"vectors": 8, "enabled": False}
    check(c, 0, "rmmod peach2")
    rc, out = c.run(0, "peach2-info")
    assert rc == EXIT_NO_DRIVER
    assert "peach2-info: the peach2 driver is not loaded: PCI view only" in out


def test_status_while_a_job_runs_then_a_node_dies(ring4, tmp_path):
    # A job holds node0's command channel; status() still answers, from every node.
    job = {}
    t = threading.Thread(target=lambda: job.update(r=ring4.run(0, "sleep 12; echo done", 60)))
    t.start()
    time.sleep(1)
    t0 = time.monotonic()
    st = ring4.status()
    took = time.monotonic() - t0
    # It did not wait for the job: node0's answer came while the job still held its channel.
    assert t.is_alive(), "status() took %.1f s: it waited for the job" % took
    assert [n.state for n in st.nodes] == ["ok"] * 4, st.table()
    assert [l.state for l in st.links] == ["up"] * 4, st.table()
    text = st.table()
    assert "cables (4 of 4 up):" in text
    for i in range(4):
        assert "node%d.E -- node%d.W  up" % (i, (i + 1) % 4) in text
    png = st.draw(str(tmp_path / "ring4.png"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    t.join()
    assert job["r"][0] == 0 and "done" in job["r"][1], "status() disturbed the job"
    # The command line's status printer (scripts/cluster.py --status).
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cluster_mod._print_status(ring4, str(tmp_path / "ring4.svg"))
    assert "cables (4 of 4 up):" in buf.getvalue()
    assert "<svg" in open(tmp_path / "ring4.svg").read()

    ring4.kill_node(2)

    def two_down():
        s = ring4.status()
        states = {"%d%s-%d%s" % (l.a + l.b): l.state for l in s.links}
        return s if states == {"0E-1W": "up", "1E-2W": "down", "2E-3W": "down",
                               "3E-0W": "up"} else None
    st = wait_until(two_down, timeout=20, interval=1, what="the cables of node2 down")
    assert st.nodes[2].state == "down"
    text = st.table()
    assert "cables (2 of 4 up):" in text
    assert "node1.E -- node2.W  down" in text and "node1 port E says down" in text
    svg = st.draw(str(tmp_path / "ring4-down.svg"))
    assert "stroke-dasharray" in open(svg).read()   # down cables are dashed
    if os.environ.get("PEACH2_STATUS_SAMPLES"):     # docs/status.md's pictures
        st.draw(os.path.join(os.environ["PEACH2_STATUS_SAMPLES"], "ring4-node2-killed.png"))


def test_non_root_user_gets_all_but_the_capabilities(cluster2):
    """Linux lets only root read config space past 64 bytes: the Debian guest's `user` gets
    the driver's state and the PCI header, and is told the capabilities are unreadable."""
    rc, out = cluster2.run(0, "su user -c 'peach2-info --json'")
    assert rc == EXIT_OK, out
    doc = json.loads(out)
    validate(doc)
    pci = doc["cards"][0]["pci"]
    assert pci["config_readable"] is False
    assert pci["msix"] is None and pci["pcie_type"] is None
    assert len(pci["bars"]) == 3 and pci["driver"] == "peach2"
    assert doc["cards"][0]["driver"]["node_id"] == 0
    text = check(cluster2, 0, "su user -c peach2-info 2>&1")
    assert "capabilities unreadable (config space past 64 bytes needs root)" in text
    assert "warning" not in text
