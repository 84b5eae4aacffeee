#!/usr/bin/python3
"""The management network of a cluster: an Ethernet segment between its guests only.

Every node has one virtio-net NIC whose QEMU backend is a unix datagram socket
(`-netdev dgram`, one Ethernet frame per datagram) in the cluster's private run directory;
all of them send to one switch socket beside them, served by this module's Switch in a
process the launcher starts before the guests and stops after them. So the segment
exists only while the cluster runs, has nothing to do with the host's network (no
address, no port, no tap), and two clusters never share anything: their run directories
differ (mkdtemp, mode 0700).

The switch learns which port (node) each source MAC lives behind and forwards unicast
frames there; broadcast, multicast and unknown destinations go to every other port. A
port is identified by the socket path the frame came from (nic-<i>.sock), which only
processes of this user can bind inside the run directory; frames from anything else are
dropped. Sends never block: a frame for a node whose queue is full, or that is down, is
dropped, as a real switch drops it.

Addresses (one definition, used by the launcher and passed to the guests on the kernel
command line as guest.net=<prefix> guest.nodes=<n>): node i is <prefix>.<i+1>/24, named
node<i> in every guest's /etc/hosts.

    python3 scripts/mgmtnet.py RUN_DIR NODES      # run a switch (the launcher does this)
"""
import errno
import os
import socket
import sys

SUBNET = "10.32.0"          # node i: 10.32.0.<i+1>/24 (guest-internal: never on the host)
MAX_NODES = 253
SWITCH_SOCK = "switch.sock"
MAX_FRAME = 65536


def node_ip(i):
    return "%s.%d" % (SUBNET, i + 1)


def node_mac(i):
    """Locally administered, unique per node inside a cluster."""
    return "52:54:00:32:%02x:%02x" % (i >> 8, i & 0xff)


def nic_path(run_dir, i):
    return os.path.join(run_dir, "nic-%d.sock" % i)


def switch_path(run_dir):
    return os.path.join(run_dir, SWITCH_SOCK)


def kernel_args(n):
    """What the guests' init reads to configure eth0 and /etc/hosts."""
    return "guest.net=%s guest.nodes=%d" % (SUBNET, n)


def qemu_args(run_dir, i):
    """Node i's NIC (a virtio-net on the switch). Put it after -device peach2 so that
    the card keeps its PCI address."""
    return ["-netdev", "dgram,id=mgmt,local.type=unix,local.path=%s,remote.type=unix,"
            "remote.path=%s" % (nic_path(run_dir, i), switch_path(run_dir)),
            "-device", "virtio-net-pci,netdev=mgmt,mac=%s" % node_mac(i)]


class Switch:
    """A learning Ethernet switch over unix datagram sockets (one port per node)."""

    def __init__(self, run_dir, n):
        if not 1 <= n <= MAX_NODES:
            raise ValueError("the management network has 1..%d nodes" % MAX_NODES)
        self.n = n
        self.ports = {nic_path(run_dir, i): i for i in range(n)}
        self.paths = [nic_path(run_dir, i) for i in range(n)]
        self.macs = {}                      # MAC (6 bytes) -> port
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        path = switch_path(run_dir)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.sock.bind(path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.stats = {"frames": 0, "flooded": 0, "dropped": 0, "foreign": 0}

    def _send(self, port, frame):
        try:
            self.sock.sendto(frame, socket.MSG_DONTWAIT, self.paths[port])
        except OSError as e:
            # Full queue, node not started yet, node gone: drop the frame.
            if e.errno not in (errno.EAGAIN, errno.ENOENT, errno.ECONNREFUSED,
                               errno.ENOBUFS, errno.ENOTCONN):
                raise
            self.stats["dropped"] += 1

    def forward(self, frame, src_path):
        """Handle one frame received from src_path."""
        port = self.ports.get(src_path)
        if port is None or len(frame) < 14:
            self.stats["foreign"] += 1
            return
        self.stats["frames"] += 1
        dst, src = frame[0:6], frame[6:12]
        if not src[0] & 1:
            self.macs[src] = port
        out = None if dst[0] & 1 else self.macs.get(dst)
        if out is None:
            self.stats["flooded"] += 1
            for p in range(self.n):
                if p != port:
                    self._send(p, frame)
        elif out != port:
            self._send(out, frame)

    def serve(self):
        while True:
            frame, src = self.sock.recvfrom(MAX_FRAME)
            self.forward(frame, src)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: mgmtnet.py RUN_DIR NODES\n")
        return 2
    sw = Switch(argv[1], int(argv[2]))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        sw.serve()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
