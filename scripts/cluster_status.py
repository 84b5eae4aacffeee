"""The cluster at a glance: every node's `peach2-info --json`, a table, and the cabling drawn.

Used by scripts/cluster.py (`Cluster.status()`, `--status`); the parts that only format
are pure, so tests feed them canned JSON (tests/test_status_host.py).

    st = cluster.status()                 # ClusterStatus (read-only, about a second)
    print(st.table())                     # a line per node, then a line per cable
    st.draw("status.svg")                 # PNG or SVG by extension (matplotlib)

Each cable of the launcher's plan is judged from both ends: "up" when both cards say up
and name each other as the plan does, "down" when a card says down or its node is gone,
"miswired" when a card's peer is not the planned one, and "connected" (transport only,
no HELLO yet) otherwise. A node that does not answer is shown as such, and its cables
are judged from the other end.
"""

import json
import math

UP, DOWN, CONNECTED, MISWIRED, UNKNOWN = "up", "down", "connected", "miswired", "unknown"


def parse_info(text):
    """The JSON document peach2-info --json printed (stdout; anything after it ignored)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in peach2-info output: %r" % text[:200])
    doc, _ = json.JSONDecoder().raw_decode(text[start:])
    if doc.get("format") != "peach2-info":
        raise ValueError("not peach2-info output (format %r)" % doc.get("format"))
    return doc


def _card(doc):
    """The first card's driver state (the one /dev/peach2-0 is), or None."""
    cards = (doc or {}).get("cards") or []
    return cards[0].get("driver") if cards else None


def _port(driver, name):
    for p in (driver or {}).get("ports", []):
        if p.get("port") == name:
            return p
    return None


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return "%d B" % n  # not reached


class NodeStatus:
    """One node: state is "ok" (peach2-info answered), "no-card"/"no-driver" (it did, with
    that status), "down" (QEMU is not running) or "error" (no usable answer)."""

    def __init__(self, node, state, info=None, error=""):
        self.node, self.state, self.info, self.error = node, state, info, error

    @property
    def driver(self):
        return _card(self.info)

    def to_dict(self):
        return {"node": self.node, "state": self.state, "info": self.info, "error": self.error}


class LinkStatus:
    def __init__(self, a, b, state, why, ends):
        self.a, self.b = a, b            # (node, port) of each end, as planned
        self.state, self.why = state, why
        self.ends = ends                 # [port dict or None] as each end reported it

    def bytes_ab(self):
        """Bytes sent a->b (a's tx; b's rx if a did not answer)."""
        pa, pb = self.ends
        return pa["tx_bytes"] if pa else (pb["rx_bytes"] if pb else None)

    def bytes_ba(self):
        pa, pb = self.ends
        return pb["tx_bytes"] if pb else (pa["rx_bytes"] if pa else None)

    def to_dict(self):
        return {"a": "%d%s" % self.a, "b": "%d%s" % self.b, "state": self.state,
                "why": self.why, "bytes_ab": self.bytes_ab(), "bytes_ba": self.bytes_ba()}


def judge_link(a, b, nodes):
    """LinkStatus of the cable a=(node, port) <-> b=(node, port) from both ends' reports."""
    ends, seen = [], []
    for (n, p), (peer_n, peer_p) in ((a, b), (b, a)):
        ns = nodes[n] if n < len(nodes) else None
        port = _port(ns.driver, p) if ns is not None and ns.state == "ok" else None
        ends.append(port)
        if ns is None or ns.state == "down":
            seen.append((DOWN, "node%d is down" % n))
        elif port is None:
            seen.append((UNKNOWN, "node%d did not report port %s" % (n, p)))
        elif port.get("link") == "up":
            if (port.get("peer_node"), port.get("peer_port")) != (peer_n, peer_p):
                seen.append((MISWIRED, "node%d port %s sees node %s port %s, not node%d port %s"
                             % (n, p, port.get("peer_node"), port.get("peer_port"),
                                peer_n, peer_p)))
            else:
                seen.append((UP, ""))
        elif port.get("link") == "connected":
            seen.append((CONNECTED, "node%d port %s: transport connected, no HELLO" % (n, p)))
        else:
            seen.append((DOWN, "node%d port %s says %s" % (n, p, port.get("link") or "?")))
    states = [s for s, _ in seen]
    whys = "; ".join(w for _, w in seen if w)
    for worst in (DOWN, MISWIRED, CONNECTED):
        if worst in states:
            return LinkStatus(a, b, worst, whys, ends)
    if states == [UP, UP]:
        return LinkStatus(a, b, UP, "", ends)
    if UP in states:  # one end up, the other end did not answer: believe the one that did
        return LinkStatus(a, b, UP, whys, ends)
    return LinkStatus(a, b, UNKNOWN, whys, ends)


class ClusterStatus:
    """What Cluster.status() returns: nodes (NodeStatus, by index) and links (LinkStatus,
    one per planned cable)."""

    def __init__(self, nodes, cables, topology=None):
        self.nodes = nodes
        self.cables = cables
        self.topology = topology
        self.links = [judge_link(a, b, nodes) for a, b in cables]

    def links_up(self):
        return sum(1 for l in self.links if l.state == UP)

    def to_dict(self):
        return {"topology": self.topology, "nodes": [n.to_dict() for n in self.nodes],
                "links": [l.to_dict() for l in self.links]}

    # -- text ----------------------------------------------------------------
    def table(self):
        rows = [("node", "state", "card", "id/count", "firmware", "E", "W", "S", "errors",
                 "DMA busy", "rp served")]
        for ns in self.nodes:
            d = ns.driver
            if d is None:
                pci = ((ns.info or {}).get("cards") or [{}])[0].get("pci") or {}
                rows.append(("node%d" % ns.node, ns.state, pci.get("address", "-"),
                             "-", "-", "-", "-", "-", "-", "-", "-"))
                continue
            pci = ns.info["cards"][0]["pci"]
            ports = {}
            for p in "EWS":
                q = _port(d, p) or {}
                if q.get("link") == "up":
                    ports[p] = "%s>%s%s" % (q.get("link"), q.get("peer_node"), q.get("peer_port"))
                else:
                    ports[p] = q.get("link") or "?"
            fw = d.get("firmware") or {}
            # The topology of a loaded image, else the status (none, bad-crc, ...).
            fw_text = fw.get("topology") if fw.get("status") == "ok" else fw.get("status")
            fw_text = fw_text or "-"
            errs = d.get("errors") or {}
            busy = sum(1 for c in (d.get("dma") or {}).get("channels", [])
                       if c.get("state") != "idle")
            rp = d.get("read_proxy") or {}
            served = sum(rp.get(k, 0) for k in ("served_read", "served_cas", "served_faa"))
            rows.append(("node%d" % ns.node, ns.state, pci.get("address", "?"),
                         "%s/%s" % (d.get("node_id"), d.get("node_count")), fw_text,
                         ports["E"], ports["W"], ports["S"], str(errs.get("count", "?")),
                         str(busy), str(served)))
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
        out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        out.append("")
        out.append("cables (%d of %d up):" % (self.links_up(), len(self.links)))
        for l in self.links:
            ab, ba = l.bytes_ab(), l.bytes_ba()
            traffic = "" if ab is None and ba is None else "  %s -> / <- %s" % (
                "?" if ab is None else human_bytes(ab), "?" if ba is None else human_bytes(ba))
            out.append("  node%d.%s -- node%d.%s  %-9s%s%s" % (
                l.a[0], l.a[1], l.b[0], l.b[1], l.state, traffic,
                ("  (%s)" % l.why) if l.why and l.state != UP else ""))
        for ns in self.nodes:
            if ns.state not in ("ok",) and ns.error:
                out.append("node%d: %s" % (ns.node, ns.error))
        return "\n".join(out) + "\n"

    # -- picture -------------------------------------------------------------
    def draw(self, path, title=None):
        """The cabling as a picture (PNG or SVG, by the extension): nodes on a circle,
        a line per cable, green when up, red dashed when down, orange otherwise, labelled
        with the bytes sent each way. Returns path."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        n = len(self.nodes)
        pos = {}
        for ns in self.nodes:
            ang = math.pi / 2 - 2 * math.pi * ns.node / max(n, 1)
            pos[ns.node] = (math.cos(ang), math.sin(ang)) if n > 1 else (0.0, 0.0)
        colours = {UP: "#2a9d3a", DOWN: "#d62828", CONNECTED: "#f4a100",
                   MISWIRED: "#f4a100", UNKNOWN: "#888888"}
        fig, ax = plt.subplots(figsize=(6.4, 6.4))
        for k, l in enumerate(self.links):
            (xa, ya), (xb, yb) = pos[l.a[0]], pos[l.b[0]]
            # Two cables between the same pair of nodes (N=2 with S, double rings): bend.
            same = [m for m in self.links if {m.a[0], m.b[0]} == {l.a[0], l.b[0]}]
            bend = 0.0 if len(same) < 2 else (same.index(l) - (len(same) - 1) / 2) * 0.35
            xm, ym = (xa + xb) / 2, (ya + yb) / 2
            dx, dy = xb - xa, yb - ya
            norm = math.hypot(dx, dy) or 1.0
            xc, yc = xm - dy / norm * bend, ym + dx / norm * bend
            style = "--" if l.state == DOWN else "-"
            ax.plot([xa, xc, xb], [ya, yc, yb], style, color=colours[l.state],
                    linewidth=3 if l.state == UP else 2, zorder=1)
            ab, ba = l.bytes_ab(), l.bytes_ba()
            label = "%d.%s - %d.%s %s" % (l.a[0], l.a[1], l.b[0], l.b[1], l.state.upper())
            if ab is not None or ba is not None:
                label += "\n%d\u2192%d %s\n%d\u2192%d %s" % (
                    l.a[0], l.b[0], "?" if ab is None else human_bytes(ab),
                    l.b[0], l.a[0], "?" if ba is None else human_bytes(ba))
            ax.text(xc, yc, label, ha="center", va="center", fontsize=8, zorder=3,
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=colours[l.state]))
        for ns in self.nodes:
            x, y = pos[ns.node]
            alive = ns.state == "ok"
            ax.scatter([x], [y], s=1800, zorder=2, color="#cfe3ff" if alive else "#f2c4c4",
                       edgecolors="#1d3557" if alive else "#d62828", linewidths=2)
            d = ns.driver
            sub = "id %s" % d.get("node_id") if d else ns.state
            ax.text(x, y, "node%d\n%s" % (ns.node, sub), ha="center", va="center",
                    fontsize=9, zorder=4)
        ax.set_xlim(-1.5, 1.5)
        ax.set_ylim(-1.5, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title or "PEACH2 cluster%s: %d of %d cables up" % (
            " (%s)" % self.topology if self.topology else "", self.links_up(),
            len(self.links)))
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path


def node_status_from_output(node, rc, out):
    """NodeStatus from `peach2-info --json`'s exit status and output on a node."""
    try:
        doc = parse_info(out)
    except ValueError as e:
        return NodeStatus(node, "error", None, "peach2-info exited %s: %s" % (rc, e))
    state = doc.get("status", "error")
    return NodeStatus(node, state, doc, doc.get("message", ""))
