"""A rogue peer: a program on a PEACH2 link port that speaks the link protocol of
docs/hardware.md §5 (32-byte little-endian header, HELLO, WRITE, RPREQ) with any header
field a test wants, including the ones no honest card sends (issue 14).

    with RoguePeer(path) as r:           # connects to a card's listening port socket
        r.hello(node=2, nodes=3)         # seq 0
        r.write(dst=1, addr=..., data=b"x" * 8, hops=255)
        r.send_raw(r.packet(...))        # any bytes at all
        r.closed_by_card(timeout=5)      # True once the card dropped the connection

Every field comes from include/peach2/peach2_hw.h through peach2_testlib.hw(). The
constructor reads nothing: a peer that never reads is the default; drain() reads what the
card sent (and discards it).
"""

import socket
import struct
import time

from peach2_testlib import hw

HEADER = struct.Struct("<IBBBBHHIQII")  # magic ver type hops flags src dst len addr seq rsvd
HELLO = struct.Struct("<IIII")           # node_id node_count port version
RP_REQ = struct.Struct("<BBHIIIQQQQ2Q")  # struct peach2_rp_req (64 bytes)
RP_PIECE = struct.Struct("<QII")         # struct peach2_rp_piece (16 bytes)
PORTS = {"N": 0, "E": 1, "W": 2, "S": 3}


def node_base(node):
    return node << hw("PEACH2_SLICE_SHIFT")


def doorbell(node):
    return node_base(node) + hw("PEACH2_CARD_OFF") + hw("PEACH2_CARD_DOORBELL_OFF")


class RoguePeer:
    def __init__(self, path, connect_timeout=10.0):
        self.path = path
        self.seq = 0
        deadline = time.monotonic() + connect_timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            # A card whose main loop hangs must fail the test, not hang it.
            self.sock.settimeout(connect_timeout)
            try:
                self.sock.connect(path)
                self.sock.settimeout(None)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    # -- packets ------------------------------------------------------------------
    def packet(self, ptype, payload=b"", *, src=0, dst=0, addr=0, hops=0, flags=0,
               seq=None, magic=None, version=None, length=None, number=0):
        """Header + payload; seq defaults to the next one (and advances)."""
        if seq is None:
            seq = self.seq
            self.seq += 1
        return HEADER.pack(hw("PEACH2_PKT_MAGIC") if magic is None else magic,
                           hw("PEACH2_PKT_VERSION") if version is None else version,
                           ptype, hops, flags, src, dst,
                           len(payload) if length is None else length,
                           addr, seq, number) + payload

    def hello_packet(self, node, nodes, port="E", major=None, seq=None):
        major = hw("PEACH2_VERSION_MAJOR") if major is None else major
        body = HELLO.pack(node, nodes, PORTS[port], major << 16)
        return self.packet(hw("PEACH2_PKT_HELLO"), body, src=node, dst=node, seq=seq)

    def write_packet(self, dst, addr, data, *, src, hops=0):
        return self.packet(hw("PEACH2_PKT_WRITE"), data, src=src, dst=dst,
                           addr=node_base(dst) + addr, hops=hops)

    def rpreq_packet(self, target, *, src, seq, cpl, export_id=1, key=0, length=64,
                     addr=0x1000, reply=0x2000):
        body = RP_REQ.pack(hw("PEACH2_RP_OP_READ"), hw("PEACH2_RP_VERSION"), src, export_id,
                           key, length, addr, seq, reply, cpl, 0, 0)
        return self.packet(hw("PEACH2_PKT_RPREQ"), body, src=src, dst=target,
                           addr=doorbell(target))

    # -- the socket -----------------------------------------------------------------
    def send_raw(self, data):
        self.sock.sendall(data)

    def hello(self, node, nodes, port="E"):
        self.send_raw(self.hello_packet(node, nodes, port))

    def write(self, dst, addr, data, *, src, hops=0):
        self.send_raw(self.write_packet(dst, addr, data, src=src, hops=hops))

    def drain(self, timeout=0.2):
        """Read (and discard) what the card sent; the byte count. Stops at EOF."""
        got = 0
        self.sock.settimeout(timeout)
        try:
            while True:
                b = self.sock.recv(1 << 20)
                if not b:
                    break
                got += len(b)
        except (socket.timeout, ConnectionResetError):
            pass  # a card that dropped the stream with bytes unread resets it
        finally:
            self.sock.settimeout(None)
        return got

    def closed_by_card(self, timeout=5.0):
        """True once the card has dropped the connection (EOF or reset)."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    if not self.sock.recv(1 << 20):
                        return True
                except socket.timeout:
                    continue
                except (ConnectionResetError, BrokenPipeError):
                    return True
            return False
        finally:
            self.sock.settimeout(None)
