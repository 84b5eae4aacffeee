#!/usr/bin/python3
"""Write the core fuzzer's seed inputs (corpus/core/seed-*): one short program
per thing the card does, in core_fuzz.cc's encoding, so that the fuzzer starts
from working transfers instead of finding every field by chance. Run it again
when that encoding changes (inputs that found bugs, crash-*, are kept as they
are: the unit tests replay them all)."""
import os
import struct
import sys

# Operations, in core_fuzz.cc's enum Op order.
(REG_WRITE, REG_READ, CARDMEM_WRITE, CARDMEM_READ, WINDOW_WRITE, WINDOW_READ,
 CLOSE_WRITE, SERVICE, WIRE_RAW, WIRE_PACKET, WIRE_HELLO, LINK_EVENT, RESET,
 CARRY, RAM_WRITE, DESCRIPTOR, DMA_START, FIRMWARE, READ_PROXY, INBOUND,
 ROGUE_READS) = range(21)

PAIR = 0x10       # setup: HELLOs carried and all RAM registered before the program
RING2 = 0x02      # setup: ring:2, both cables
NODES3 = 0x01     # setup: 3 nodes
TX4K = 0x04       # setup: 4 KiB send queues
E, W, S = 1, 2, 3
SIZE8, SIZE4 = 3, 2
SLICE = 1 << 31


def u8(v): return struct.pack('<B', v & 0xff)
def u16(v): return struct.pack('<H', v & 0xffff)
def u32(v): return struct.pack('<I', v & 0xffffffff)
def u64(v): return struct.pack('<Q', v & 0xffffffffffffffff)
def op(kind, card=0): return u8(kind << 1 | card)


def host(node, off): return u8(node) + u8(0) + u16(off)        # global_addr(): host RAM
def mailbox(node, off): return u8(node) + u8(1) + u16(off)     # the card region
def gpu(node, off): return u8(node) + u8(2) + u16(off)
def ram(off): return u8(0) + u16(off)                          # bus_addr(): RAM
def bar0(off): return u8(5) + u16(off)                         # bus_addr(): own BAR0
def bar4(off): return u8(6) + u32(off)                         # bus_addr(): own window


def reg_write(off, val, card=0, size=SIZE4): return op(REG_WRITE, card) + u16(off) + u64(val) + u8(size)
def reg_read(off, card=0, size=SIZE4): return op(REG_READ, card) + u16(off) + u8(size)
def carry(piece=8192): return op(CARRY) + u16(piece - 1)
def service(card=0, n=8): return op(SERVICE, card) + u8(n - 1)


def stores(card, addr, values, size=SIZE8):
    return op(WINDOW_WRITE, card) + addr + u8(size) + u8(len(values) - 1) + b''.join(u64(v) for v in values)


def ram_write(card, off, data): return op(RAM_WRITE, card) + u16(off) + u8(len(data)) + data


def desc(card, index, src, dst, length, nxt, flags, host_off=None):
    shape = 0 if host_off is None else 16
    b = op(DESCRIPTOR, card) + u16(index) + src + dst + u8(shape) + u16(length) + u16(nxt) + u8(flags)
    return b + (u16(host_off) if host_off is not None else b'')


def dma_chain(card, ch, head): return op(DMA_START, card) + u8(ch) + u8(1 | 1 << 4) + u16(head)


def dma_reg(card, ch, src, dst, length, block=0, flags=0):
    return (op(DMA_START, card) + u8(ch) + u8(4 | 2 << 4) + src + dst + u16(length) + u32(block) + u8(flags))


def firmware(card, entries, corrupt=None, node_count=None):
    how = (16 if corrupt is not None else 0) | (1 if node_count is not None else 0)
    b = op(FIRMWARE, card) + u8(how) + (u8(node_count) if node_count is not None else b'')
    b += u32(7) + u8(len(entries))
    for node, port, index, base_node in entries:
        b += u8(node) + u8(port) + u8(index) + u8(base_node)
    if corrupt is not None:
        b += u16(corrupt) + u8(0x5a)
    return b + u16(0x4000)


def rp_ring(card, entries_log2, base): return op(READ_PROXY, card) + u8(0) + u8(entries_log2) + ram(base)


def rp_request(card, target, rop, length, addr, seq, reply, cpl):
    return (op(READ_PROXY, card) + u8(2) + u8(rop) + u16(length) + ram(addr) + u64(seq) + ram(reply)
            + u16(cpl) + u64(0) + u8(target))


def hello(card, node, port, node_count=None):
    if node_count is None:
        return op(WIRE_HELLO, card) + u8(0) + u8(node) + u8(port)
    return op(WIRE_HELLO, card) + u8(1) + u8(node) + u32(node_count) + u8(port)


def packet(card, ptype, src, dst, addr, payload, hops=0, flags=0):
    b = op(WIRE_PACKET, card) + u8(flags) + u8(ptype)
    b += u8(hops) + (u8(0) if flags & 8 else b'') + u8(src) + u8(dst)
    if ptype != 3 or flags & 32:
        b += addr
    return b + u32(0x1234) + u16(len(payload)) + payload


def link(card, port, up=None, attach=False):
    return op(LINK_EVENT, card) + u8(port | (0x80 if attach else 0) | (0x40 if up else 0))


def inbound(card, cmd, base, size): return op(INBOUND, card) + u8(cmd) + u16(base) + u16(size)


ROUTES_2 = [(0, 0, 0, 0), (0, E, 0, 1), (1, 0, 0, 1), (1, W, 0, 0)]

SEEDS = {
    'pio-store-remote': u8(PAIR) + stores(0, host(1, 0x100), [1, 2, 3, 4]) + carry() + service(1),
    'pio-store-local': u8(PAIR) + stores(0, host(0, 0x200), [5, 6]) + op(CLOSE_WRITE) + service(0),
    'pio-mailbox': u8(PAIR) + stores(1, mailbox(0, 0x40), [9] * 8, SIZE4) + op(CLOSE_WRITE, 1) + carry(),
    'pio-bad-targets': u8(PAIR) + stores(0, gpu(1, 0), [1]) + stores(0, host(16, 0), [1]) + stores(0, host(2, 0), [1]) + carry(),
    'window-reads': u8(PAIR) + op(WINDOW_READ) + host(1, 0) + u8(SIZE8) + op(WINDOW_READ, 1) + mailbox(0, 0) + u8(SIZE4),
    'pio-split-pieces': u8(PAIR) + stores(0, host(1, 0x1000), list(range(64))) + carry(7) + carry(33) + carry(),
    'dma-reg-local': u8(PAIR) + ram_write(0, 0x100, bytes(range(64))) + dma_reg(0, 0, ram(0x100), host(0, 0x800), 64) + service(0),
    'dma-reg-remote': u8(PAIR) + ram_write(0, 0x100, bytes(range(64))) + dma_reg(0, 1, ram(0x100), host(1, 0x900), 64) + service(0) + carry() + service(1),
    'dma-chain-cardmem': (u8(PAIR) + ram_write(0, 0, bytes(range(128)))
                          + desc(0, 0, ram(0), host(1, 0x400), 64, 1, 0)
                          + desc(0, 1, ram(64), host(1, 0x500), 64, 0, 1)
                          + dma_chain(0, 2, 0) + service(0) + carry()),
    'dma-chain-host': (u8(PAIR) + desc(0, 0, ram(0), host(1, 0x400), 32, 0, 1, host_off=0x2000)
                       + op(DMA_START) + u8(3) + u8(1 | 2 | 1 << 4) + ram(0x2000) + service(0) + carry()),
    'dma-chain-loop': u8(PAIR) + desc(0, 5, ram(0), host(1, 0), 16, 5, 0) + dma_chain(0, 0, 5) + service(0, 8),
    'dma-to-own-bar': (u8(PAIR) + dma_reg(0, 0, bar0(0), host(0, 0x100), 64) + service(0)
                       + dma_reg(1, 1, ram(0), host(1, 0), 32) + dma_reg(0, 2, bar4(0x40), host(1, 0), 16) + service(0)),
    'dma-imm-stride': (u8(PAIR) + desc(0, 0, u8(0) + u16(0xbeef), host(1, 0x40), 8, 0, 1 | 4)
                       + desc(0, 1, ram(0), host(1, 0x80), 256, 0, 1 | 16) + dma_chain(0, 0, 0) + dma_chain(0, 1, 1) + service(0) + carry()),
    'dma-abort-reset': (u8(PAIR) + dma_reg(0, 0, ram(0), host(1, 0), 0xfff0) + reg_write(0x400, 4)
                        + dma_reg(0, 1, ram(0), host(1, 0), 0xfff0) + op(RESET) + service(0) + carry()),
    'dma-backpressure': (u8(PAIR | TX4K) + dma_reg(0, 0, ram(0), host(1, 0), 0xfff0)
                         + dma_reg(0, 1, ram(0), host(0, 0x8000), 0x1000) + service(0, 8) + carry(100) + service(0, 8)),
    'firmware-ring2': u8(PAIR | RING2) + firmware(0, ROUTES_2) + firmware(1, ROUTES_2) + service(0) + service(1) + stores(0, host(1, 0), [7]) + carry(),
    'firmware-corrupt': u8(PAIR) + firmware(0, ROUTES_2, corrupt=8) + service(0) + stores(0, host(1, 0), [7]) + carry(),
    'firmware-wrong-topology': u8(PAIR) + firmware(0, ROUTES_2, node_count=5) + service(0) + firmware(0, []) + service(0),
    'read-proxy-read': (u8(PAIR) + rp_ring(1, 3, 0x8000) + ram_write(1, 0x100, bytes(range(32)))
                        + rp_request(0, 1, 1, 32, 0x100, 1, 0x200, 0x300) + carry() + service(1)
                        + reg_read(0x714, 1) + reg_write(0x710, 1, 1) + carry()),
    'read-proxy-off-full': (u8(PAIR) + rp_request(0, 1, 1, 32, 0, 1, 0x200, 0x300) + carry()
                            + rp_ring(1, 0, 0x8000) + rp_request(0, 1, 2, 8, 0, 2, 0, 0x320)
                            + rp_request(0, 1, 3, 8, 0, 3, 0, 0x340) + carry() + carry()),
    'rogue-hello-packets': (u8(NODES3) + hello(0, 2, W) + packet(0, 2, 2, 0, host(0, 0x40), b'\x11' * 16)
                            + packet(0, 3, 2, 0, b'', bytes(64)) + packet(0, 1, 2, 0, host(0, 0), bytes(16))
                            + service(0) + op(ROGUE_READS) + u32(1000)),
    'rogue-hop-wrap': u8(NODES3) + hello(1, 2, E) + packet(1, 2, 2, 0, host(0, 0), b'\x22' * 8, hops=255, flags=4) + carry(),
    'rogue-identity-spoof': u8(PAIR) + hello(0, 1, W) + hello(1, 0, E) + hello(0, 15, E, 16) + carry(),
    'rogue-garbage': u8(0) + op(WIRE_RAW) + u8(2) + u8(40) + b'P2PT' + bytes(36) + op(WIRE_RAW, 1) + u8(0) + u8(16) + b'\xff' * 16,
    'rogue-never-reads': u8(NODES3 | TX4K) + hello(0, 2, W) + b''.join(rp_request(0, 2, 1, 4, 0, i, 0, 0) for i in range(1, 6)) + service(0),
    'links-flap': (u8(PAIR) + stores(0, host(1, 0), [1, 2]) + link(0, E, up=False) + stores(0, host(1, 0), [3])
                   + link(0, E, up=True) + carry() + link(1, S, attach=True) + link(1, W, up=False) + carry()),
    'reset-mid-stream': u8(PAIR) + stores(0, host(1, 0), list(range(32))) + carry(50) + op(RESET, 1) + carry() + stores(1, host(0, 0), [1]) + carry(),
    'inbound-ranges': (u8(0) + inbound(0, 1, 0x1000, 0x1000) + inbound(0, 1, 0x1800, 0x100) + inbound(0, 2, 0x1000, 0)
                       + inbound(0, 3, 0, 0) + reg_write(0x70, 0) + reg_read(0x8c)),
    'register-sweep': u8(PAIR) + b''.join(reg_read(off, off & 1, SIZE4 if off % 8 else SIZE8) for off in range(0, 0x800, 4)),
    'register-writes': u8(0) + b''.join(reg_write(off, 0xffffffff, 0) for off in range(0, 0x800, 8)) + service(0),
    'cardmem-rw': u8(0) + op(CARDMEM_WRITE) + u16(0x8000) + u64(1) + u8(SIZE8) + op(CARDMEM_READ) + u16(0xfffe) + u8(SIZE8),
}


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus', 'core')
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, 'seed-' + name), 'wb') as f:
            f.write(data)
    print(f'{len(SEEDS)} seeds in {out}', file=sys.stderr)


if __name__ == '__main__':
    main()
