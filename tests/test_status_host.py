"""Host tests of the cluster status view (scripts/cluster_status.py): judging cables from
both ends, the table and the drawing, from canned `peach2-info --json` documents (the format
of userlib/tools/info/README.md). No VMs."""

import copy
import json
import os

import pytest

from peach2_testlib import REPO, cluster_mod  # noqa: F401  (puts scripts/ on sys.path)

import cluster_status as cs  # noqa: E402
from info_schema import validate  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def info_doc(node, n, links, tx=0):
    """A peach2-info --json document for node `node` of `n`: links = {port: (peer, peer_port)
    or "down"}; every port sent `tx` bytes."""
    ports = [{"port": "N", "link": "host", "peer_node": None, "peer_port": None,
              "tx_pkts": 0, "tx_bytes": 0, "rx_pkts": 0, "rx_bytes": 0}]
    for p in "EWS":
        v = links.get(p, "down")
        up = v != "down"
        ports.append({"port": p, "link": "up" if up else "down",
                      "peer_node": v[0] if up else None, "peer_port": v[1] if up else None,
                      "tx_pkts": tx // 64 if up else 0, "tx_bytes": tx if up else 0,
                      "rx_pkts": 0, "rx_bytes": 0})
    return {
        "format": "peach2-info", "version": 1, "host": "node%d" % node, "status": "ok",
        "message": "", "driver_loaded": True,
        "cards": [{
            "pci": {"address": "0000:00:03.0", "vendor": "1234", "device": "7ca2",
                    "class": "0280", "revision": "01", "bars": [], "msix": None,
                    "link": None, "driver": "peach2"},
            "driver": {"device": "peach2-0", "node_id": node, "node_count": n,
                       "hw_version": "1.1",
                       "firmware": {"status": "ok", "version": 1, "routes": 8,
                                    "topology": "ring:%d" % n},
                       "ports": ports,
                       "errors": {"count": 0, "last": 0, "last_name": "NONE", "status": 0,
                                  "by_code": []},
                       "dma": {"channels": [{"channel": c, "state": "idle", "queued": 0,
                                             "completed": 0, "errors": 0} for c in range(4)],
                               "desc_used": 0, "desc_free": 1024},
                       "read_proxy": {"served_read": 2, "served_cas": 0, "served_faa": 1},
                       "problems": []}}]}


def ring(n):
    cables = [((i, "E"), ((i + 1) % n, "W")) for i in range(n)]
    docs = []
    for i in range(n):
        docs.append(info_doc(i, n, {"E": ((i + 1) % n, "W"), "W": ((i - 1) % n, "E")},
                             tx=1000 * (i + 1)))
    return cables, docs


def status_of(cables, docs, down=()):
    nodes = []
    for i, d in enumerate(docs):
        if i in down:
            nodes.append(cs.NodeStatus(i, "down", None, "QEMU is not running"))
        else:
            nodes.append(cs.node_status_from_output(i, 0, "@@ noise\n" + json.dumps(d)))
    return cs.ClusterStatus(nodes, cables, "ring:%d" % len(docs))


def test_ring_all_up_table_counts_and_traffic():
    st = status_of(*ring(4))
    assert [l.state for l in st.links] == ["up"] * 4
    assert st.links_up() == 4
    # node0.E -> node1.W: node0 sent 1000 bytes, node1 sent 2000 on its W.
    assert st.links[0].bytes_ab() == 1000 and st.links[0].bytes_ba() == 2000
    text = st.table()
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["node", "state", "card", "id/count"]
    assert lines[1].split()[:5] == ["node0", "ok", "0000:00:03.0", "0/4", "ring:4"]
    assert "up>1W" in lines[1] and "up>3E" in lines[1]
    assert "cables (4 of 4 up):" in text
    assert "node0.E -- node1.W  up" in text
    assert "1000 B -> / <- 1.95 KiB" not in text  # human units: 2000 B is 2.0 KiB
    assert "1000 B -> / <- 2.0 KiB" in text


def test_killed_node_marks_its_cables_down_from_the_other_end():
    cables, docs = ring(4)
    # node2 is gone: node1's E and node3's W say down.
    docs[1]["cards"][0]["driver"]["ports"][1].update(link="down", peer_node=None, peer_port=None)
    docs[3]["cards"][0]["driver"]["ports"][2].update(link="down", peer_node=None, peer_port=None)
    st = status_of(cables, docs, down={2})
    states = {"%d%s-%d%s" % (l.a + l.b): l.state for l in st.links}
    assert states == {"0E-1W": "up", "1E-2W": "down", "2E-3W": "down", "3E-0W": "up"}
    assert st.links_up() == 2
    text = st.table()
    assert "node2  down" in text
    assert "(node1 port E says down; node2 is down)" in text
    assert "node2: QEMU is not running" in text


def test_one_end_silent_other_end_up_is_believed_and_miswire_is_flagged():
    cables, docs = ring(3)
    nodes = [cs.node_status_from_output(0, 0, json.dumps(docs[0])),
             cs.NodeStatus(1, "error", None, "status channel: timeout"),
             cs.node_status_from_output(2, 0, json.dumps(docs[2]))]
    st = cs.ClusterStatus(nodes, cables)
    assert st.links[0].state == "up"          # node0.E says up to node1.W
    assert st.links[0].bytes_ba() == 0        # node1 silent: node0's rx counts
    bad = copy.deepcopy(docs)
    bad[0]["cards"][0]["driver"]["ports"][1]["peer_node"] = 2
    st = status_of(cables, bad)
    assert st.links[0].state == "miswired"
    assert "node0 port E sees node 2 port W, not node1 port W" in st.links[0].why


def test_no_card_and_garbage_outputs():
    none = {"format": "peach2-info", "version": 1, "host": "node0", "status": "no-card",
            "message": "no PEACH2 card found", "driver_loaded": False, "cards": []}
    ns = cs.node_status_from_output(0, 2, json.dumps(none))
    assert ns.state == "no-card" and ns.driver is None and "no PEACH2" in ns.error
    ns = cs.node_status_from_output(1, 127, "sh: peach2-info: not found\n")
    assert ns.state == "error" and "exited 127" in ns.error
    with pytest.raises(ValueError):
        cs.parse_info('{"format": "other"}')
    st = cs.ClusterStatus([cs.node_status_from_output(0, 2, json.dumps(none))],
                          [((0, "E"), (1, "W"))])
    assert st.links[0].state == "down"       # node1 was never reported: out of range = gone
    assert "no PEACH2 card found" in st.table()


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_draw_png_and_svg(tmp_path, ext):
    cables, docs = ring(4)
    docs[1]["cards"][0]["driver"]["ports"][1].update(link="down", peer_node=None, peer_port=None)
    st = status_of(cables, docs, down={2})
    path = st.draw(str(tmp_path / ("c." + ext)))
    data = open(path, "rb").read()
    if ext == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    else:
        text = data.decode()
        assert "<svg" in text
        # Labels are text in the SVG (matplotlib's svg.fonttype 'path' draws glyphs; look for
        # the colours instead): green up cables and red dashed down ones.
        assert "#2a9d3a" in text and "#d62828" in text
        assert "stroke-dasharray" in text



def test_real_capture_validates_and_is_judged():
    """tests/data/peach2-info-ring4-node1.json: printed by peach2-info in a ring:4 guest
    (busybox) after a PIO ping-pong between nodes 0 and 1 (docs/status.md)."""
    with open(os.path.join(DATA, "peach2-info-ring4-node1.json")) as f:
        real = cs.parse_info(f.read())
    validate(real)
    d = real["cards"][0]["driver"]
    assert (d["node_id"], d["node_count"], d["firmware"]["topology"]) == (1, 4, "ring:4")
    cables, docs = ring(4)
    docs[1] = real
    st = status_of(cables, docs)
    assert [l.state for l in st.links] == ["up"] * 4
    w = next(p for p in d["ports"] if p["port"] == "W")
    assert st.links[0].bytes_ba() == w["tx_bytes"] > 100000   # node1 -> node0: the pongs
    row = st.table().splitlines()[2].split()
    assert row[:5] == ["node1", "ok", "0000:00:01.0", "1/4", "ring:4"]


def test_firmware_column_shows_the_status_when_no_image_is_loaded():
    cables, docs = ring(3)
    docs[0]["cards"][0]["driver"]["firmware"].update(status="none", topology="none")
    docs[1]["cards"][0]["driver"]["firmware"].update(status="bad-crc")
    lines = status_of(cables, docs).table().splitlines()
    assert lines[1].split()[4] == "none" and lines[2].split()[4] == "bad-crc"
    assert lines[3].split()[4] == "ring:3"
