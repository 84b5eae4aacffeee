#!/usr/bin/python3
"""Boot and drive a cluster of N QEMU guests joined by emulated PEACH2 cards.

Module (Python 3 stdlib only) and command line tool.

    from cluster import Cluster
    with Cluster(2) as c:                  # boots both nodes, waits for PEACH2-READY
        rc, out = c.run(0, "cat /sys/class/peach2/peach2-0/node_id")
        results = c.run_all("lspci -n")    # [(rc, out) for node 0..N-1], in parallel
        text = c.console_log(1)            # ttyS0 (kernel console) of node 1

    scripts/cluster.py --nodes 2 -- 'cat /sys/class/peach2/peach2-0/node_id'
    scripts/cluster.py --nodes 3 --interactive
    scripts/cluster.py --nodes 2 --copy ./ring:/tmp/ring --mpi openmpi -- 'mpirun -np 2 /tmp/ring'

Each node is one qemu-system-x86_64 (q35, TCG, 256 MiB, one CPU) booting the Debian
guest kernel with our initramfs (scripts/build-initramfs.sh). The default guest is a
Debian userland: every node attaches the same read-only root image
(scripts/build-guest-root.py) as a virtio disk, boots into it under a RAM overlay, and
joins the cluster's management network (scripts/mgmtnet.py: node<i> at 10.32.0.<i+1>,
a switch process in the run directory, nothing on the host's network), where
peach2-rsh starts MPI's remote processes. guest="busybox" boots the initramfs alone
(no network unless asked for). ttyS0 goes to a console
log file in the run directory; ttyS1 is a unix socket the launcher connects to and
speaks the command protocol of scripts/guest/init over:

    guest: ... "PEACH2-READY node=<id|none>\\n"      once, after boot
    host:  "<command>\\n"                             one line
    guest: <output> "\\n@@RC <rc>\\n"                 the newline before @@RC is framing

ttyS2 is a second socket with the same framing (no READY line) for read-only queries beside
a running command: Cluster.status() collects every node's `peach2-info --json` over it
(scripts/cluster_status.py prints the table and draws the cabling; docs/status.md).
Host files go in over a fourth socket, a virtio-serial port named org.peach2.copy (MB/s
where the UARTs move ~15 KB/s under TCG): Cluster.copy_in() connects, runs
scripts/guest/peach2-receive on the command channel and writes the file's bytes.

Cabling: N=2: node0.E <-> node1.W; N>=3: a ring,
node i E <-> node (i+1)%N W. Every cable is one unix socket in the run directory; the
E side listens (server=on,wait=off), the W side connects (reconnect=1).

Environment: PEACH2_QEMU (QEMU binary), PEACH2_KERNEL (kernel: default the PVH vmlinux
of scripts/fetch-guest-kernel.sh, else its vmlinuz), PEACH2_INITRD
(initramfs), PEACH2_GUEST (debian or busybox: the default guest), PEACH2_ROOT_IMAGE (the
Debian root image), PEACH2_CACHE, PEACH2_BUILD, PEACH2_GUEST_KVER (defaults as
scripts/lib.sh).
"""

import argparse
import atexit
import ctypes
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mgmtnet  # noqa: E402  (scripts/mgmtnet.py)
import qmp  # noqa: E402  (scripts/qmp.py)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTS = ("E", "W", "S")
DEVICE_ID = "peach2"  # QOM path /machine/peripheral/peach2 (fault injection)
FAULTS = ("cut", "restore", "drop", "delay", "stall", "unstall", "deaf", "hear")
READY_RE = re.compile(rb"PEACH2-READY node=(\S+)\r?\n")
RC_RE = re.compile(rb"\n@@RC (-?\d+)\r?\n")
BAD_KERNEL_PATTERNS = ("BUG:", "Oops", "WARNING:", "Call Trace")
FIRMWARE_DIRS = ("/usr/share/seabios", "/usr/lib/ipxe/qemu", "/usr/share/qemu")
GUESTS = ("debian", "busybox")
# shm: shared-memory rings, and writes straight into the peer's RAM (guest RAM is a
# shared memfd); shm-ring: the rings only; socket: everything through the socket.
LINK_TRANSPORTS = ("shm", "shm-ring", "socket")
UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the NUL


class _Match:
    """The groups of a regex match, copied out of the buffer it was found in."""

    def __init__(self, m):
        self._groups = (bytes(m.group(0)),) + tuple(
            None if g is None else bytes(g) for g in m.groups())
        self._end = m.end()

    def group(self, i=0):
        return self._groups[i]

    def end(self):
        return self._end


class ClusterError(RuntimeError):
    """A node failed to boot, died, or a command could not be run."""


class CommandTimeout(ClusterError):
    """A command did not finish in time. .output holds what it printed so far."""

    def __init__(self, msg, output=""):
        super().__init__(msg)
        self.output = output


# ---------------------------------------------------------------------------
# Settings shared with scripts/lib.sh

def _lib_default(var, fallback):
    """The default of VAR=${VAR:-default} in scripts/lib.sh (single source of truth)."""
    try:
        with open(os.path.join(REPO, "scripts", "lib.sh"), encoding="utf-8") as f:
            m = re.search(r"^%s=\$\{%s:-([^}]*)\}" % (var, var), f.read(), re.M)
            if m:
                return m.group(1)
    except OSError:
        pass
    return fallback


def cache_dir():
    if os.environ.get("PEACH2_CACHE"):
        return os.environ["PEACH2_CACHE"]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "peach2")


def build_dir():
    return os.environ.get("PEACH2_BUILD") or os.path.join(REPO, "build")


def guest_kver():
    return os.environ.get("PEACH2_GUEST_KVER") or _lib_default("PEACH2_GUEST_KVER", "6.1.0-56-amd64")


def default_qemu():
    """$PEACH2_QEMU, else the QEMU that scripts/build-qemu.sh built from this checkout's
    device sources (a link in the build dir: other checkouts on the machine share the
    cache and may have built a different device), else the cache's newest build."""
    if os.environ.get("PEACH2_QEMU"):
        return os.environ["PEACH2_QEMU"]
    own = os.path.join(build_dir(), "qemu-system-x86_64")
    if os.path.lexists(own):  # even dangling (pruned from the cache): never another device
        return own
    ver = os.environ.get("PEACH2_QEMU_VERSION") or _lib_default("PEACH2_QEMU_VERSION", "7.2")
    return os.path.join(cache_dir(), "qemu-%s" % ver, "bin", "qemu-system-x86_64")


def default_kernel():
    """$PEACH2_KERNEL, else the decompressed PVH vmlinux (boots ~4-5 s faster under TCG
    than the XZ bzImage), else vmlinuz; both come from scripts/fetch-guest-kernel.sh."""
    if os.environ.get("PEACH2_KERNEL"):
        return os.environ["PEACH2_KERNEL"]
    g = os.path.join(cache_dir(), "guest")
    elf = os.path.join(g, "vmlinux-%s" % guest_kver())
    return elf if os.path.exists(elf) else os.path.join(g, "vmlinuz-%s" % guest_kver())


def default_initrd():
    """$PEACH2_INITRD, else build/guest/initramfs.cpio (PEACH2_INITRD_COMPRESS=none of
    scripts/build-initramfs.sh, which then removes the .gz) if it exists, else
    build/guest/initramfs.cpio.gz (its default)."""
    if os.environ.get("PEACH2_INITRD"):
        return os.environ["PEACH2_INITRD"]
    raw = os.path.join(build_dir(), "guest", "initramfs.cpio")
    return raw if os.path.exists(raw) else raw + ".gz"


def default_guest():
    """$PEACH2_GUEST, else "debian" (the guest README describes)."""
    g = os.environ.get("PEACH2_GUEST") or "debian"
    if g not in GUESTS:
        raise ValueError("PEACH2_GUEST must be one of %s, not %r" % (", ".join(GUESTS), g))
    return g


def default_root_image():
    """$PEACH2_ROOT_IMAGE, else build/guest/debian-root.squashfs (a link into the cache
    that scripts/build-guest-root.py maintains)."""
    return os.environ.get("PEACH2_ROOT_IMAGE") or os.path.join(
        build_dir(), "guest", "debian-root.squashfs")


# ---------------------------------------------------------------------------
# The cabling plan and QEMU command lines (pure functions: unit-tested on the host)

def cabling(n):
    """Cables for n nodes: a list of ((node, port), (node, port)), server side first."""
    if n < 1:
        raise ValueError("need at least one node")
    if n == 1:
        return []
    if n == 2:
        return [((0, "E"), (1, "W"))]
    return [((i, "E"), ((i + 1) % n, "W")) for i in range(n)]


def topology_plan(spec):
    """(nodes, cables, firmware file) for a topology spec: "2", "ring:N",
    "double-ring:K", "cables:N:0E-1W,...". The cables come from peach2-fwgen
    (firmware/), the same code that computes the routing tables, so the launcher
    and the firmware can never disagree about the wiring."""
    tool = os.environ.get("PEACH2_FWGEN") or os.path.join(build_dir(), "firmware", "peach2-fwgen")
    if not os.access(tool, os.X_OK):
        raise ClusterError("%s not found: build it with 'make firmware'" % tool)
    r = subprocess.run([tool, "--cables", spec], capture_output=True, text=True)
    if r.returncode != 0:
        raise ClusterError("topology %r: %s" % (spec, r.stderr.strip()))
    lines = r.stdout.split("\n")
    n = int(lines[0].split()[1])
    cables = []
    for line in lines[1:]:
        if line.strip():
            a, b = line.split()
            cables.append(((int(a[:-1]), a[-1]), (int(b[:-1]), b[-1])))
    return n, cables, "peach2/%s.bin" % spec.replace(":", "-")


def free_tcp_ports(count):
    """Loopback TCP ports that are free now (for TCP cables)."""
    socks, ports = [], []
    try:
        for _ in range(count):
            so = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            so.bind(("127.0.0.1", 0))
            socks.append(so)
            ports.append(so.getsockname()[1])
    finally:
        for so in socks:
            so.close()
    return ports


def link_socket_path(run_dir, node, port):
    return os.path.join(run_dir, "link-%d%s.sock" % (node, port))


def node_paths(run_dir, i, boot=0):
    sfx = "" if boot == 0 else ".%d" % boot
    return {
        "console": os.path.join(run_dir, "console-%d%s.log" % (i, sfx)),
        "stderr": os.path.join(run_dir, "qemu-%d%s.log" % (i, sfx)),
        "chan": os.path.join(run_dir, "chan-%d.sock" % i),
        "info": os.path.join(run_dir, "info-%d.sock" % i),  # status channel (ttyS2)
        "qmp": os.path.join(run_dir, "qmp-%d.sock" % i),    # QMP: fault injection
        "copy": os.path.join(run_dir, "copy-%d.sock" % i),  # copy channel (virtio-serial)
        "chanlog": os.path.join(run_dir, "chan-%d%s.log" % (i, sfx)),
    }


def _check_path(p):
    if "," in p:
        raise ClusterError("path %r contains a comma (QEMU option syntax)" % p)
    if p.endswith(".sock") and len(p.encode()) > UNIX_PATH_MAX:
        raise ClusterError("unix socket path too long (%d > %d): %s" % (len(p), UNIX_PATH_MAX, p))
    return p


def link_args(i, n, run_dir, cables=None, tcp_ports=None):
    """(chardev args, device properties) for node i's ports.

    For each cable, the server (first) end gets a listening socket chardev, the other
    end a reconnecting client chardev on the same path (or, with tcp_ports, the same
    loopback TCP port: tcp_ports[k] for cable k). Chardev ids are "l" + port in
    lower case (le, lw, ls). Ports without a cable get nothing."""
    if cables is None:
        cables = cabling(n)
    args, props = [], {}
    for k, (a, b) in enumerate(cables):
        if tcp_ports:
            path = None
            where = "host=127.0.0.1,port=%d" % tcp_ports[k]
        else:
            path = _check_path(link_socket_path(run_dir, a[0], a[1]))
            where = "path=%s" % path
        for end, server in ((a, True), (b, False)):
            if end[0] != i:
                continue
            port = end[1]
            if port not in PORTS:
                raise ValueError("bad port %r" % (port,))
            key = "port-%s" % port.lower()
            if key in props:
                raise ValueError("node %d port %s has two cables" % (i, port))
            cid = "l%s" % port.lower()
            if server:
                spec = "socket,id=%s,%s,server=on,wait=off" % (cid, where)
            else:
                spec = "socket,id=%s,%s,reconnect=1" % (cid, where)
            args += ["-chardev", spec]
            props[key] = cid
    return args, props


def _fmt_props(props):
    return ",".join("%s=%s" % (k, v) for k, v in props.items())


# How long a serving read-proxy thread looks for the next request (driver
# parameter rp_poll_us) when every guest has a host CPU to itself: a get of 8 bytes then
# takes ~8 µs instead of ~45-75 (docs/notes.md, twenty-sixth session). Off when guests share
# CPUs (ring:8 on 2 cores: MPI jobs up to 2.3x slower) and on socket cables, whose
# requests come through the main loop whatever the guest looks at.
RP_LOOK_US = 200


def rp_look_us(n, transport="unix", link_transport="shm"):
    """rp_poll_us for the guests of an n-node cluster on this host (0: no look)."""
    if transport != "unix" or link_transport not in ("shm", "shm-ring"):
        return 0
    return RP_LOOK_US if n <= len(os.sched_getaffinity(0)) else 0


def qemu_argv(i, n, run_dir, qemu, kernel, initrd, *, mem=256, append_extra="",
              cables=None, device_props=None, extra_args=None, boot=0, with_device=True,
              loglevel=4, tcp_ports=None, root_image=None, network=False, link_transport="shm"):
    """The full argv of node i's QEMU. root_image: the Debian root (a read-only virtio
    disk, /dev/vda, shared by all nodes); network: a NIC on the management network;
    link_transport: "shm" (unix-socket cables carry their data through shared memory,
    writes straight into the peer's guest RAM, which is then a shared memfd), "shm-ring"
    (the shared-memory rings only) or "socket" (the socket carries everything; TCP
    cables always do)."""
    p = node_paths(run_dir, i, boot)
    for k in ("console", "chan", "info", "qmp", "copy"):
        _check_path(p[k])
    cargs, props = link_args(i, n, run_dir, cables, tcp_ports)
    # tsc=reliable: under TCG the guest's TSC follows the host's clock, but the kernel's
    # clocksource watchdog, reading HPET from a vCPU the host descheduled, took it for
    # unstable on a busy host ("hpet read-back delay of 288900ns") and moved the clock to
    # HPET, an MMIO read per clock_gettime for the rest of the guest's life: perftest's
    # clock check failed from then on, and every timed figure of that guest was off.
    append = "console=ttyS0 loglevel=%d panic=-1 tsc=reliable peach2.node=%d" % (loglevel, i)
    if root_image:
        append += " guest.root=/dev/vda"
    if network:
        append += " " + mgmtnet.kernel_args(n)
    if append_extra:
        append += " " + append_extra
    shm = link_transport in ("shm", "shm-ring") and not tcp_ports
    direct = link_transport == "shm" and not tcp_ports and with_device
    # Direct writes need the guest RAM in a file the peer can map.
    machine = ["-object", "memory-backend-memfd,id=ram0,size=%dM,share=on" % mem,
               "-machine", "q35,memory-backend=ram0"] if direct else ["-machine", "q35"]
    argv = [qemu, "-name", "node%d,debug-threads=on" % i] + machine + [
            "-accel", "tcg", "-m", str(mem), "-smp", "1",
            "-display", "none", "-vga", "none", "-monitor", "none", "-nodefaults",
            "-no-reboot", "-nic", "none",
            "-kernel", kernel, "-initrd", initrd, "-append", append,
            "-chardev", "file,id=con,path=%s" % p["console"], "-serial", "chardev:con",
            "-chardev", "socket,id=cmd,path=%s,server=on,wait=off" % p["chan"],
            "-serial", "chardev:cmd",
            "-chardev", "socket,id=info,path=%s,server=on,wait=off" % p["info"],
            "-serial", "chardev:info",
            "-qmp", "unix:%s,server=on,wait=off" % p["qmp"],
            "-global", "q35-pcihost.pci-hole64-size=64G"]
    for d in FIRMWARE_DIRS:
        argv += ["-L", d]
    if with_device:
        dev = {"id": DEVICE_ID, "node-id": i, "nodes": n,
               "link-shm": "on" if shm else "off", "link-direct": "on" if direct else "off"}
        dev.update(props)
        dev.update(device_props or {})
        argv += cargs + ["-device", "peach2," + _fmt_props(dev)]
    # The virtio devices after the card, so that the card keeps its PCI address.
    if root_image:
        argv += ["-drive", "file=%s,if=none,id=root,format=raw,readonly=on" % _check_path(root_image),
                 "-device", "virtio-blk-pci,drive=root"]
    if network:
        for path in (mgmtnet.nic_path(run_dir, i), mgmtnet.switch_path(run_dir)):
            _check_path(path)
        argv += mgmtnet.qemu_args(run_dir, i)
    # The copy channel (Cluster.copy_in): a virtio-serial port, MB/s where the UART of the
    # command channel moves ~15 KB/s under TCG.
    argv += ["-device", "virtio-serial-pci,id=vser0,max_ports=2",
             "-chardev", "socket,id=copy,path=%s,server=on,wait=off" % p["copy"],
             "-device", "virtserialport,bus=vser0.0,chardev=copy,name=%s" % COPY_PORT_NAME]
    argv += list(extra_args or [])
    return argv


def _per_port(text):
    """"E: a=1 b=2; W: ..." (the card's QOM read-outs) -> {"E": {"a": 1, "b": 2}, ...}."""
    out = {}
    for part in text.split(";"):
        port, _, fields = part.strip().partition(":")
        out[port] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
    return out


# ---------------------------------------------------------------------------
# Cleanup of every live cluster on exit and on fatal signals

_live = weakref.WeakSet()
_handlers_installed = False
_prev_handlers = {}


def prioritise_io_threads(pid):
    """Put a QEMU's I/O threads (everything but its vCPU threads) in SCHED_FIFO.

    Why: every guest in a cluster spins on memory while it waits for a message, so
    on a small host all cores run vCPU threads, and the main loop that must move
    the message (socket read, DMA write into the guest) waits for a time slice:
    measured 44 us per wake-up on average with ms-long tails. A real-time main
    loop preempts a spinning vCPU at once. It runs only for short bursts, and the
    kernel's RT throttling keeps a runaway one from taking a whole core.
    Returns the number of threads changed (0 when not permitted or disabled).
    """
    if os.environ.get("PEACH2_RT_IO", "1") == "0":
        return 0
    changed = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid), encoding="utf-8") as f:
                comm = f.read().strip()
            if comm.startswith("CPU "):  # "CPU 0/TCG": leave the vCPUs alone
                continue
            os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(1))
            changed += 1
        except (OSError, AttributeError):
            continue  # not permitted, or the thread is gone
    return changed


def _cleanup_all():
    for c in list(_live):
        try:
            c.stop(quiet=True)
        except Exception:  # pragma: no cover - best effort at exit
            pass


class Signalled(BaseException):
    """SIGTERM or SIGHUP arrived. Raised in the main thread so that it unwinds
    (`with cluster:` stops the cluster, atexit stops the rest) and the clusters are
    stopped outside the signal handler: a handler that waits for QEMU and the reader
    threads runs in the middle of whatever code it interrupted, locks held included.
    main() then dies of the signal."""

    def __init__(self, signum):
        super().__init__("signal %d" % signum)
        self.signum = signum


def _on_signal(signum, frame):
    prev = _prev_handlers.get(signum)
    if callable(prev):
        _cleanup_all()
        prev(signum, frame)
        return
    for s in _prev_handlers:  # a second signal must not cut the cleanup short
        signal.signal(s, signal.SIG_IGN)
    raise Signalled(signum)


def die_of(signum):
    """Stop every live cluster, then end this process by the signal's default action."""
    _cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers():
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_cleanup_all)
    if threading.current_thread() is not threading.main_thread():
        return
    prev_hook = sys.excepthook

    def excepthook(kind, value, tb):  # a program of ours that did not catch Signalled
        if issubclass(kind, Signalled):
            die_of(value.signum)
        prev_hook(kind, value, tb)
    sys.excepthook = excepthook
    for s in (signal.SIGTERM, signal.SIGHUP):
        try:
            prev = signal.getsignal(s)
            if prev in (signal.SIG_IGN,):
                continue
            _prev_handlers[s] = prev
            signal.signal(s, _on_signal)
        except (ValueError, OSError):
            pass


def _child_setup():
    # Own session (a terminal ^C reaches the launcher, which then powers the guests off),
    # and SIGKILL QEMU if the launcher dies without cleaning up (PR_SET_PDEATHSIG = 1).
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


def _tail(path, nbytes=3000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return "(no %s)" % path


# ---------------------------------------------------------------------------
# Host files into the guests (no shared file system): over each node's copy channel, a
# virtio-serial port whose host end is a unix socket (qemu_argv), received by
# scripts/guest/peach2-receive.

COPY_PORT_NAME = "org.peach2.copy"    # the port's name; peach2-receive looks for it
# The channel moved 7-12 MB/s into each of two guests on a quiet host (docs/notes.md,
# twelfth session): the bound allows one 30 times slower, plus the command under TCG.
COPY_MIN_RATE = 250000                # bytes/s
COPY_BASE_TIMEOUT = 60                # s


def parse_copy(spec):
    """`SRC[:DEST]` of --copy -> (SRC, DEST). DEST is an absolute guest path; one ending
    in / (or none: /tmp/) is a directory, the file keeps its name there. SRC must be a
    regular file on the host (a symlink to one is followed). ValueError says what is
    wrong."""
    src, sep, dest = spec.rpartition(":")
    if not sep:
        src, dest = spec, "/tmp/"
    return copy_plan(src, dest)


def copy_plan(src, dest):
    """(SRC, DEST) checked as parse_copy() does; DEST completed with SRC's name when it
    names a directory."""
    if not src:
        raise ValueError("copy %r: no host file named" % dest)
    try:
        st = os.stat(src)
    except OSError as e:
        raise ValueError("copy %s: %s" % (src, e.strerror)) from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("copy %s: not a regular file (directories are not copied)" % src)
    if not os.access(src, os.R_OK):
        raise ValueError("copy %s: not readable" % src)
    if not dest.startswith("/"):
        raise ValueError("copy %s: the guest path %r is not absolute" % (src, dest))
    if dest.endswith("/"):
        dest += os.path.basename(src)
    if any(ch in dest for ch in "\n\r\0"):
        raise ValueError("copy %s: the guest path has a newline or NUL" % src)
    return src, dest


def guest_mode(host_mode):
    """The file's mode in the guest: the host's permission bits, readable by everyone
    and executable by everyone if its owner may execute it (commands run as root, but
    `su user -c ...` must be able to run a copied program)."""
    mode = stat.S_IMODE(host_mode) & 0o777 | 0o444
    if mode & stat.S_IXUSR:
        mode |= 0o111
    return mode


def _hang_up(sock):
    """Shut a connected socket down both ways (a thread blocked on it returns), then
    close it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


# ---------------------------------------------------------------------------

class Node:
    """One QEMU process and its command channel."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.proc = None
        self.sock = None
        self.buf = bytearray()
        self.pos = 0            # bytes of buf already consumed
        self.eof = False
        self.cond = threading.Condition()
        self.lock = threading.Lock()   # one command at a time
        self.reader = None
        self.boot = -1          # number of (re)starts so far
        self.consoles = []      # console log of every boot
        self.paths = None
        self.started_at = None
        self.boot_time = None   # seconds from QEMU start to PEACH2-READY
        self.ready_id = None    # the node=... word of the READY line
        self.banner = ""        # what init printed on ttyS1 before READY
        self.pending = 0        # commands that timed out and may still print
        self.info_lock = threading.Lock()  # the status channel: one query at a time
        self.info_sock = None
        self.info_seq = 0
        self.copy_lock = threading.Lock()  # the copy channel: one file at a time

    # -- process --------------------------------------------------------------
    def launch(self):
        c = self.cluster
        self.boot += 1
        self.paths = node_paths(c.run_dir, self.index, self.boot)
        self.consoles.append(self.paths["console"])
        argv = c.argv(self.index, self.boot)
        self.close_info()
        for k in ("chan", "info", "copy"):
            try:  # a stale socket of an earlier boot: connect() must not find it
                os.unlink(self.paths[k])
            except FileNotFoundError:
                pass
        with open(self.paths["stderr"], "wb") as err:
            err.write(("# " + " ".join(shlex.quote(a) for a in argv) + "\n").encode())
            err.flush()
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err,
                                         stderr=subprocess.STDOUT, close_fds=True,
                                         preexec_fn=_child_setup)
        self.started_at = time.monotonic()
        self.buf = bytearray()
        self.pos = 0
        self.eof = False
        self.pending = 0
        self.boot_time = None
        self.ready_id = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def failure_report(self, what):
        rc = self.proc.poll() if self.proc else None
        return ("node%d: %s (qemu %s)\n--- qemu stderr (%s) ---\n%s\n"
                "--- console (%s) ---\n%s" % (
                    self.index, what,
                    "exited rc=%s" % rc if rc is not None else "still running",
                    self.paths["stderr"], _tail(self.paths["stderr"]),
                    self.paths["console"], _tail(self.paths["console"])))

    def connect(self, deadline):
        path = self.paths["chan"]
        while True:
            if not self.alive():
                raise ClusterError(self.failure_report("QEMU exited before its serial socket appeared"))
            if os.path.exists(path):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    break
                except OSError:
                    s.close()
            if time.monotonic() > deadline:
                raise ClusterError(self.failure_report("serial socket %s did not appear" % path))
            time.sleep(0.02)
        self.sock = s
        log = open(self.paths["chanlog"], "wb")
        self.reader = threading.Thread(target=self._read_loop, args=(s, log),
                                       name="node%d-reader" % self.index, daemon=True)
        self.reader.start()

    def _read_loop(self, s, log):
        try:
            while True:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    break
                log.write(data)
                log.flush()
                with self.cond:
                    self.buf += data
                    self.cond.notify_all()
        finally:
            log.close()
            with self.cond:
                self.eof = True
                self.cond.notify_all()

    def close_channel(self):
        if self.sock is not None:
            _hang_up(self.sock)
            self.sock = None
        if self.reader is not None:
            self.reader.join(timeout=5)
            self.reader = None

    def open_copy(self, data, timeout):
        """Connect to the copy channel's host end and write data into it from a thread:
        (socket, thread, list that gets the writer's OSError, if any). QEMU takes the
        bytes only while the guest reads the port."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self.paths["copy"])
        except OSError as e:
            s.close()
            raise ClusterError("node%d: cannot connect to the copy channel %s: %s"
                               % (self.index, self.paths["copy"], e.strerror)) from None
        failed = []

        def write():
            try:
                s.sendall(data)
            except OSError as e:
                failed.append(e)

        writer = threading.Thread(target=write, name="node%d-copy" % self.index, daemon=True)
        writer.start()
        return s, writer, failed

    @staticmethod
    def close_copy(sock, writer):
        """Hang up the copy channel: QEMU drops what the guest did not take, so nothing of
        this copy reaches the next one."""
        _hang_up(sock)
        writer.join(timeout=5)

    def close_info(self):
        if self.info_sock is not None:
            self.info_sock.close()
            self.info_sock = None

    def query(self, cmd, timeout):
        """Run a short command on the status channel (ttyS2, served beside the command
        channel by scripts/guest/init): (rc, output). For read-only queries while a job
        holds the command channel; each query is tagged, so that the output of one that
        timed out is never taken for the next one's."""
        with self.info_lock:
            deadline = time.monotonic() + timeout
            self.info_seq += 1
            tag = b"@@Q%d\n" % self.info_seq
            try:
                if self.info_sock is None:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(timeout)
                    s.connect(self.paths["info"])
                    self.info_sock = s
                self.info_sock.sendall(b"echo @@Q%d; %s\n" % (self.info_seq, cmd.encode()))
                buf = b""
                while True:
                    at = buf.find(tag)
                    m = RC_RE.search(buf, at + len(tag)) if at >= 0 else None
                    if m:
                        return int(m.group(1)), buf[at + len(tag):m.start()].decode("utf-8", "replace")
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise socket.timeout()
                    self.info_sock.settimeout(left)
                    data = self.info_sock.recv(65536)
                    if not data:
                        raise OSError("the status channel closed")
                    buf += data
            except socket.timeout:
                self.close_info()
                raise CommandTimeout("node%d: %r did not answer on the status channel in %s s"
                                     % (self.index, cmd, timeout))
            except OSError as e:
                self.close_info()
                raise ClusterError("node%d: status channel %s: %s" % (self.index, self.paths["info"], e))

    # -- protocol ------------------------------------------------------------
    def wait_for(self, regex, deadline, what):
        """Wait until regex matches the unconsumed buffer; consume through the match."""
        with self.cond:
            while True:
                m = regex.search(self.buf, self.pos)
                if m:
                    before = bytes(self.buf[self.pos:m.start()])
                    # The match refers to self.buf itself: take what the caller
                    # needs before trimming the buffer under it.
                    m = _Match(m)
                    self.pos = m.end()
                    if self.pos > 1 << 20:  # keep the buffer small
                        del self.buf[:self.pos]
                        self.pos = 0
                    return m, before
                if self.eof or not self.alive():
                    partial = bytes(self.buf[self.pos:]).decode("utf-8", "replace")
                    raise ClusterError(self.failure_report(
                        "died or closed its channel while waiting for %s; partial output:\n%s"
                        % (what, partial[-2000:])))
                left = deadline - time.monotonic()
                if left <= 0:
                    partial = bytes(self.buf[self.pos:]).decode("utf-8", "replace")
                    raise CommandTimeout("node%d: timeout waiting for %s" % (self.index, what),
                                         partial)
                self.cond.wait(min(left, 0.5))

    def send(self, line):
        try:
            self.sock.sendall(line.encode() + b"\n")
        except (OSError, AttributeError) as e:
            raise ClusterError(self.failure_report("cannot send to the channel: %s" % e))


class Cluster:
    """N guests joined by PEACH2 links. Use as a context manager, or start()/stop()."""

    def __init__(self, n, *, qemu=None, kernel=None, initrd=None, boot_timeout=120.0,
                 mem=256, device_props=None, qemu_args=None, append="", cables=None,
                 topology=None, transport="unix", guest=None, root_image=None, network=None,
                 with_device=True, keep=False, run_parent=None, verbose=True, loglevel=4,
                 trace=None, link_transport=None, copies=None):
        """n: number of nodes (>= 1; the cabling needs >= 2).
        device_props: dict added to every node's -device peach2,... (overrides defaults),
            or a function node -> dict.
        qemu_args: list of extra QEMU arguments, or a function node -> list.
        append: extra kernel command line. cables: override cabling(n).
        topology: "2", "ring:N", "double-ring:K" or "cables:N:...": cables from
            peach2-fwgen, and the guests load that topology's firmware image
            (peach2.firmware=... on the kernel command line); n may then be None.
            Without it: cabling(n) and no firmware (cards route to neighbours).
        transport: "unix" (socket files in the run directory) or "tcp" (loopback).
        link_transport: "shm" (default, or $PEACH2_LINK_TRANSPORT): the unix-socket
            cables carry their data through shared memory and the cards write
            straight into their neighbours' RAM (docs/hardware.md §5); "shm-ring": the
            shared-memory rings only; "socket": through the socket (as cables
            between hosts do).
        guest: "debian" (default, or $PEACH2_GUEST) boots the Debian root image
            (root_image, default build/guest/debian-root.squashfs); "busybox" the
            initramfs alone.
        network: the management network (names node0.., peach2-rsh); default on for the
            Debian guest, off for busybox.
        with_device: False boots without the card (launcher experiments only).
        keep: keep the run directory (logs) after stop(). verbose: progress on stderr.
        trace: a directory: every card records its transactions there (nodeN.p2trace,
            docs/trace-format.md) for peach2-model; created if missing.
        copies: [(host file, guest path), ...] copied into every guest after boot (and
            after restart_node()), see copy_in(); checked here (ValueError)."""
        firmware = None
        if topology is not None:
            tn, cables, firmware = topology_plan(topology)
            if n is not None and n != tn:
                raise ValueError("topology %s has %d nodes, not %d" % (topology, tn, n))
            n = tn
        if n is None or n < 1:
            raise ValueError("need at least one node")
        if transport not in ("unix", "tcp"):
            raise ValueError("transport is unix or tcp")
        link_transport = link_transport or os.environ.get("PEACH2_LINK_TRANSPORT") or "shm"
        if link_transport not in LINK_TRANSPORTS:
            raise ValueError("link_transport is one of %s, not %r"
                             % (", ".join(LINK_TRANSPORTS), link_transport))
        self.link_transport = link_transport
        guest = guest or default_guest()
        if guest not in GUESTS:
            raise ValueError("guest is one of %s" % ", ".join(GUESTS))
        self.guest = guest
        self.root_image = (root_image or default_root_image()) if guest == "debian" else None
        self.network = (guest == "debian") if network is None else bool(network)
        if self.network and n > mgmtnet.MAX_NODES:
            raise ValueError("the management network has at most %d nodes" % mgmtnet.MAX_NODES)
        self.switch = None
        self.n = n
        self.topology = topology
        self.transport = transport
        if firmware:
            append = ("%s peach2.firmware=%s" % (append, firmware)).strip()
        look = rp_look_us(n, transport, link_transport)
        if look and "peach2.rp_poll_us=" not in append:
            append = ("%s peach2.rp_poll_us=%d" % (append, look)).strip()
        self.qemu = qemu or default_qemu()
        self.kernel = kernel or default_kernel()
        self.initrd = initrd or default_initrd()
        self.boot_timeout = boot_timeout
        self.mem = mem
        self.device_props = device_props
        self.qemu_args = qemu_args
        self.append = append
        self.cables = cables if cables is not None else cabling(n)
        self.with_device = with_device
        self.keep = keep
        self.run_parent = run_parent
        self.verbose = verbose
        self.loglevel = loglevel
        self.trace = None
        if trace is not None:
            self.trace = os.path.abspath(trace)
            if "," in self.trace:  # -device splits properties at commas
                raise ValueError("trace directory %r: no commas, please" % trace)
        self.copies = [copy_plan(src, dest) for src, dest in (copies or [])]
        # Chosen once, so that a restarted node gets the same ports.
        self.tcp_ports = free_tcp_ports(len(self.cables)) if transport == "tcp" else None
        self.run_dir = None
        self.nodes = []
        self.boot_times = {}
        self._stopped = False
        self._stop_lock = threading.RLock()  # RLock: a signal may arrive inside stop()

    # -- helpers -----------------------------------------------------------
    def _say(self, msg):
        if self.verbose:
            sys.stderr.write("[cluster] %s\n" % msg)
            sys.stderr.flush()

    def _per_node(self, v, i):
        return v(i) if callable(v) else v

    def argv(self, i, boot=0):
        props = dict(self._per_node(self.device_props, i) or {})
        if self.trace:
            props.setdefault("trace", self.trace)
        return qemu_argv(i, self.n, self.run_dir, self.qemu, self.kernel, self.initrd,
                         mem=self.mem, append_extra=self.append, cables=self.cables,
                         device_props=props,
                         extra_args=self._per_node(self.qemu_args, i), boot=boot,
                         with_device=self.with_device, loglevel=self.loglevel,
                         tcp_ports=self.tcp_ports, root_image=self.root_image,
                         network=self.network, link_transport=self.link_transport)

    def _check_inputs(self):
        hints = {
            "qemu": (self.qemu, "build it with scripts/build-qemu.sh (or set PEACH2_QEMU)"),
            "kernel": (self.kernel, "fetch it with scripts/fetch-guest-kernel.sh (or set PEACH2_KERNEL)"),
            "initrd": (self.initrd, "build it with scripts/build-initramfs.sh (or set PEACH2_INITRD)"),
        }
        if self.root_image:
            hints["Debian root image"] = (
                self.root_image, "build it with `make image` (scripts/build-guest-root.py), "
                "set PEACH2_ROOT_IMAGE, or boot the busybox guest (--guest busybox)")
        for what, (path, hint) in hints.items():
            if not os.path.exists(path):
                raise ClusterError("%s %s not found: %s" % (what, path, hint))

    def _node(self, i):
        if not 0 <= i < self.n:
            raise IndexError("no node %d (cluster of %d)" % (i, self.n))
        return self.nodes[i]

    # -- lifecycle -----------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Launch every node and wait for all PEACH2-READY lines."""
        self._check_inputs()
        if self.trace:
            os.makedirs(self.trace, exist_ok=True)
        parent = self.run_parent or os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            parent = "/tmp"
        self.run_dir = tempfile.mkdtemp(prefix="peach2-", dir=parent)
        _install_handlers()
        _live.add(self)
        self._stopped = False
        self.nodes = [Node(self, i) for i in range(self.n)]
        self._say("starting %d node(s) in %s" % (self.n, self.run_dir))
        try:
            t0 = time.monotonic()
            deadline = t0 + self.boot_timeout
            if self.network:
                self._start_switch(deadline)
            for node in self.nodes:
                node.launch()
            for node in self.nodes:
                node.connect(deadline)
            self._wait_ready(self.nodes, deadline)
            self._say("all %d node(s) ready in %.1f s" % (self.n, time.monotonic() - t0))
            for src, dest in self.copies:
                self.copy_in(src, dest)
        except BaseException:
            self.stop(quiet=True)
            raise
        return self

    def _start_switch(self, deadline):
        """The management network's switch (scripts/mgmtnet.py), a child process that
        lives in the run directory and dies with the launcher."""
        log = open(os.path.join(self.run_dir, "switch.log"), "wb")
        self.switch = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "scripts", "mgmtnet.py"), self.run_dir,
             str(self.n)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            close_fds=True, preexec_fn=_child_setup)
        log.close()
        line = self.switch.stdout.readline()  # "ready" once its socket is bound
        if line.strip() != b"ready":
            self.switch.wait()
            raise ClusterError("the management network's switch did not start (rc %s): %s"
                               % (self.switch.returncode,
                                  _tail(os.path.join(self.run_dir, "switch.log"))))

    def _stop_switch(self):
        if self.switch is None:
            return
        self.switch.terminate()
        try:
            self.switch.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.switch.kill()
            self.switch.wait()
        self.switch.stdout.close()
        self.switch = None

    def _wait_ready(self, nodes, deadline):
        waiting = list(nodes)
        while waiting:
            for node in list(waiting):
                try:
                    m, before = node.wait_for(READY_RE, min(deadline, time.monotonic() + 0.2),
                                              "PEACH2-READY")
                except CommandTimeout:
                    if time.monotonic() >= deadline:
                        raise ClusterError(node.failure_report(
                            "no PEACH2-READY within %.0f s" % self.boot_timeout))
                    continue
                waiting.remove(node)
                node.boot_time = time.monotonic() - node.started_at
                node.rt_threads = prioritise_io_threads(node.proc.pid)
                node.ready_id = m.group(1).decode()
                node.banner = before.decode("utf-8", "replace")
                self.boot_times[node.index] = node.boot_time
                self._say("node%d ready (%.1f s)%s" % (
                    node.index, node.boot_time,
                    "" if node.ready_id == str(node.index) else
                    "  [card node_id=%s]" % node.ready_id))
                if node.banner.strip():
                    for line in node.banner.strip().splitlines():
                        self._say("node%d: %s" % (node.index, line))

    def stop(self, quiet=False):
        """Power every node off, then terminate/kill QEMU; remove the run directory."""
        with self._stop_lock:
            if self._stopped or self.run_dir is None:
                return
            self._stopped = True
        for node in self.nodes:
            if node.alive() and node.sock is not None:
                try:
                    node.sock.sendall(b"poweroff\n")
                except OSError:
                    pass
        deadline = time.monotonic() + 3.0
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.proc.terminate()
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait()
            node.close_channel()
            node.close_info()
        self._stop_switch()
        _live.discard(self)
        if self.keep:
            if not quiet or self.verbose:
                self._say("kept run directory %s" % self.run_dir)
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if not quiet:
            self._say("stopped")

    def kill_node(self, i):
        """SIGKILL node i's QEMU (its links drop; the peers see the link go down)."""
        node = self._node(i)
        if node.proc is not None and node.alive():
            node.proc.kill()
            node.proc.wait()
        node.close_channel()

    def restart_node(self, i, timeout=None):
        """Kill node i if it runs, boot it again, wait for PEACH2-READY.
        Call it from a long-lived thread (e.g. the main one): QEMU gets SIGKILL when the
        thread that started it exits (PR_SET_PDEATHSIG)."""
        self.kill_node(i)
        node = self._node(i)
        deadline = time.monotonic() + (timeout or self.boot_timeout)
        node.launch()
        node.connect(deadline)
        self._wait_ready([node], deadline)
        for src, dest in self.copies:
            self.copy_in(src, dest, nodes=[i])
        return node.boot_time

    # -- fault injection (docs/hardware.md §5) ----------------------------------
    def fault(self, node, action, port, arg=None):
        """Inject a fault at node's card, port E/W/S, through QMP qom-set:
        cut / restore (the cable), drop N (lose the next N packets sent), delay MS
        (the port sends nothing for MS ms), stall / unstall (the card stops reading),
        deaf / hear (the port's shared-memory wake-ups are lost: its watchdog moves the
        bytes)."""
        if action not in FAULTS or port not in PORTS:
            raise ValueError("fault: action one of %s, port one of %s"
                             % (", ".join(FAULTS), ", ".join(PORTS)))
        if (arg is None) != (action not in ("drop", "delay")):
            raise ValueError("fault %s: %s" % (action, "needs a number" if arg is None
                                               else "takes no number"))
        value = "%s %s" % (action, port) + ("" if arg is None else " %d" % arg)
        self._qom(node, "qom-set", value=value)

    def fault_state(self, node):
        """The card's fault state: {port: {"cut": 0|1, "stalled", "deaf", "held_ms",
        "drop_left", "dropped", "late_wakeups"}}."""
        return _per_port(self._qom(node, "qom-get"))

    def direct_state(self, node):
        """The card's direct writes on each port's current connection (docs/hardware.md
        §5): {port: {"on": 0|1, "sent", "sent_bytes", "received", "received_bytes"}}."""
        return _per_port(self._qom(node, "qom-get", prop="direct"))

    def _qom(self, node, command, prop="fault", **args):
        path = self._node(node).paths["qmp"]
        try:
            with qmp.QMP(path) as q:
                return q.command(command, path="/machine/peripheral/" + DEVICE_ID,
                                 property=prop, **args)
        except (qmp.QMPError, OSError) as e:
            raise ClusterError("node%d: %s" % (node, e))

    # -- commands ------------------------------------------------------------
    def run(self, node, cmd, timeout=60):
        """Run one shell command line on a node: (rc, output with stdout+stderr)."""
        if "\n" in cmd or "\r" in cmd:
            raise ValueError("a command is one line (use ';' or sh -c)")
        if cmd.strip() == "poweroff" or cmd.strip().startswith("poweroff "):
            raise ValueError("use stop() or kill_node() to power a node off")
        nd = self._node(node)
        with nd.lock:
            deadline = time.monotonic() + timeout
            while nd.pending:  # output of an earlier command that timed out
                try:
                    nd.wait_for(RC_RE, deadline, "the end of an earlier timed-out command")
                except CommandTimeout as e:
                    raise CommandTimeout("node%d: still busy with an earlier timed-out command"
                                         % node, e.output)
                nd.pending -= 1
            nd.send(cmd)
            try:
                m, out = nd.wait_for(RC_RE, deadline, "the end of %r" % cmd)
            except CommandTimeout as e:
                nd.pending += 1
                raise CommandTimeout("node%d: %r did not finish in %s s; output so far:\n%s"
                                     % (node, cmd, timeout, e.output), e.output)
            return int(m.group(1)), out.decode("utf-8", "replace")

    def check(self, node, cmd, timeout=60):
        """run() that raises ClusterError unless rc == 0; returns the output."""
        rc, out = self.run(node, cmd, timeout)
        if rc != 0:
            raise ClusterError("node%d: %r exited %d:\n%s" % (node, cmd, rc, out))
        return out

    def run_all(self, cmd, timeout=60, nodes=None):
        """Run cmd on every node (or the given ones) concurrently.

        cmd: a string ("{node}" is replaced by the node id) or a function node -> str.
        Returns a list of (rc, output) indexed like `nodes` (default: 0..N-1).
        Raises the first error after all threads finished."""
        return self._each_node(
            lambda i: self.run(i, cmd(i) if callable(cmd) else cmd.replace("{node}", str(i)),
                               timeout), nodes)

    def _each_node(self, fn, nodes=None):
        """[fn(i) for i in nodes (default 0..N-1)], each in its own thread; the first
        error is raised after all of them finished."""
        nodes = list(range(self.n)) if nodes is None else list(nodes)
        results = [None] * len(nodes)
        errors = [None] * len(nodes)

        def one(k, i):
            try:
                results[k] = fn(i)
            except BaseException as e:  # re-raised below
                errors[k] = e

        threads = [threading.Thread(target=one, args=(k, i), daemon=True)
                   for k, i in enumerate(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            if e is not None:
                raise e
        return results

    def copy_in(self, src, dest, nodes=None, timeout=None):
        """Copy the host file src to the absolute path dest on every node (or the given
        ones), in parallel, over the copy channels: mode as on the host plus read
        (and execute, if the owner has it) for everyone, missing directories created.
        dest ending in / is a directory (src's name is kept). The guest checks the
        SHA-256 before the file takes its place, so dest is either the whole file or
        untouched. ValueError for a bad src or dest, ClusterError when a node fails."""
        src, dest = copy_plan(src, dest)
        with open(src, "rb") as f:
            data = f.read()
            mode = guest_mode(os.fstat(f.fileno()).st_mode)
        digest = hashlib.sha256(data).hexdigest()
        timeout = timeout or COPY_BASE_TIMEOUT + len(data) / COPY_MIN_RATE
        t0 = time.monotonic()

        def one(i):
            nd = self._node(i)
            # The guest gives up first (its deadline bounds every read), so that its
            # message is what the host reports and its command is over when run() returns.
            guest_s = max(5, int(timeout))
            with nd.copy_lock:  # one connection, one command at a time
                # No earlier command may still read the port (one that timed out would
                # take this copy's first bytes): wait for its end first.
                self.run(i, ":", timeout=guest_s + 15)
                sock, writer, failed = nd.open_copy(data, guest_s + 20)
                cmd = "peach2-receive %d %s %o %s %d" % (len(data), digest, mode,
                                                         shlex.quote(dest), guest_s)
                try:
                    rc, out = self.run(i, cmd, timeout=guest_s + 15)
                finally:
                    nd.close_copy(sock, writer)
            if rc != 0:
                why = "; the host's end: %s" % failed[0] if failed else ""
                raise ClusterError("node%d: copying %s to %s failed (rc %d):\n%s%s"
                                   % (i, src, dest, rc, out.strip() or "(no output)", why))

        self._each_node(one, nodes)
        self._say("copied %s to %s (%d bytes) in %.1f s"
                  % (src, dest, len(data), time.monotonic() - t0))
        return dest

    # -- status ------------------------------------------------------------------
    def status(self, timeout=30, nodes=None):
        """Every node's `peach2-info --json` through the status channels, in parallel:
        a cluster_status.ClusterStatus (.table(), .draw(path), .nodes, .links). Read-only
        (PCI config and sysfs reads) and quick, so it may be called while jobs run on the
        command channels. A node whose QEMU is not running is "down"; its cables are judged
        from the other end."""
        import cluster_status  # scripts/cluster_status.py (matplotlib only when drawing)
        nodes = list(range(self.n)) if nodes is None else list(nodes)
        result = [None] * self.n

        def one(i):
            nd = self._node(i)
            if not nd.alive():
                result[i] = cluster_status.NodeStatus(i, "down", None, "QEMU is not running")
                return
            try:
                rc, out = nd.query("peach2-info --json 2>/dev/null", timeout)
            except ClusterError as e:
                result[i] = cluster_status.NodeStatus(i, "error", None, str(e).splitlines()[0])
                return
            result[i] = cluster_status.node_status_from_output(i, rc, out)

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(self.n):
            if result[i] is None:
                result[i] = cluster_status.NodeStatus(i, "unknown", None, "not asked")
        return cluster_status.ClusterStatus(result, self.cables, self.topology)

    # -- logs --------------------------------------------------------------------
    def node_alive(self, node):
        """Is node's QEMU running?"""
        return self._node(node).alive()

    def qemu_stderr(self, node, nbytes=3000):
        """The last nbytes of node's QEMU stderr (its current boot): link, transport and
        device messages."""
        paths = self._node(node).paths
        return _tail(paths["stderr"], nbytes) if paths else ""

    def console_log(self, node):
        """The kernel console (ttyS0) of a node, all boots concatenated."""
        parts = []
        for k, path in enumerate(self._node(node).consoles):
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                text = ""
            if k:
                parts.append("\n===== node%d restart %d =====\n" % (node, k))
            parts.append(text)
        return "".join(parts)

    def kernel_problems(self, node, text=None):
        """Lines of a node's console log (or of `text`) that show a kernel problem."""
        if text is None:
            text = self.console_log(node)
        return [l for l in text.splitlines() if any(p in l for p in BAD_KERNEL_PATTERNS)]


# ---------------------------------------------------------------------------
# Command line

MPIS = {"openmpi": "/usr/bin/mpirun.openmpi", "mpich": "/usr/bin/mpiexec.mpich"}


def mpi_command(mpi, cmd):
    """cmd as `--mpi` runs it on node 0: `mpirun` and `mpiexec` mean the chosen MPI's
    launcher (Debian's alternatives make them Open MPI's), and $MPI names it, so that
    `prog.$MPI` picks the build of a userlib/mpi program for it. The guests' own set-up
    places the ranks on every node in turn and keeps UCX on the cards (README, "MPI")."""
    if mpi not in MPIS:
        raise ValueError("--mpi must be one of %s, not %r" % (", ".join(MPIS), mpi))
    d = "/tmp/peach2-mpi/" + mpi
    # Scripts, not symlinks: Hydra finds hydra_pmi_proxy beside the path it was run as.
    return ("mkdir -p {d} && for f in mpirun mpiexec; do "
            "printf '#!/bin/sh\\nexec {l} \"$@\"\\n' > {d}/$f && chmod +x {d}/$f; done && "
            "export MPI={m} PATH={d}:$PATH && {c}").format(d=d, l=MPIS[mpi], m=mpi, c=cmd)


def _parse_props(items):
    props = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep:
            raise SystemExit("--device-prop wants KEY=VALUE, got %r" % it)
        props[k] = v
    return props


def _print_result(i, rc, out):
    for line in out.splitlines():
        print("[node%d] %s" % (i, line))
    if rc != 0:
        print("[node%d] (rc=%d)" % (i, rc))
    sys.stdout.flush()


def _print_status(c, picture):
    st = c.status()
    sys.stdout.write(st.table())
    if picture:
        try:
            st.draw(picture)
            print("cabling drawn to %s" % picture)
        except (ImportError, OSError, ValueError) as e:
            print("cannot draw the cabling to %s: %s" % (picture, e), file=sys.stderr)
    sys.stdout.flush()
    return st


def _fault_command(c, words):
    """:fault <node> [action port [n]]"""
    if not words or not words[0].isdigit():
        print("usage: :fault <node> [%s <E|W|S> [n]]" % "|".join(FAULTS))
        return
    node = int(words[0])
    if len(words) > 1:
        try:
            arg = int(words[3]) if len(words) > 3 else None
            c.fault(node, words[1], words[2] if len(words) > 2 else "?", arg)
        except ValueError as e:
            print("error: %s" % e)
            return
    for port, st in c.fault_state(node).items():
        print("node%d %s: %s" % (node, port, " ".join("%s=%d" % kv for kv in st.items())))


def _interactive(c):
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    cur = 0
    print("cluster of %d node(s); run dir %s" % (c.n, c.run_dir))
    print("commands run on the current node; ':node <i>' switches, ':all <cmd>' runs on "
          "every node, ':console [<i>]' shows the console tail, ':status [FILE.png|svg]' "
          "shows every card and cable, "
          "':fault <i> cut|restore|stall|unstall|deaf|hear <port>' or "
          "':fault <i> drop|delay <port> <n>' injects a fault (no args: the state), "
          "':quit' (or EOF) stops.")
    while True:
        try:
            line = input("node%d> " % cur)
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            continue
        line = line.strip()
        if not line:
            continue
        try:
            if line in (":q", ":quit", ":exit"):
                return 0
            if line.startswith(":node"):
                arg = line[5:].strip()
                if arg.isdigit() and int(arg) < c.n:
                    cur = int(arg)
                else:
                    print("usage: :node <0..%d>" % (c.n - 1))
                continue
            if line.startswith(":all "):
                for i, (rc, out) in enumerate(c.run_all(line[5:])):
                    _print_result(i, rc, out)
                continue
            if line.startswith(":status"):
                _print_status(c, line[7:].strip() or None)
                continue
            if line.startswith(":fault"):
                _fault_command(c, line[6:].split())
                continue
            if line.startswith(":console"):
                arg = line[8:].strip()
                i = int(arg) if arg.isdigit() else cur
                print("\n".join(c.console_log(i).splitlines()[-40:]))
                continue
            if line.startswith(":"):
                print("unknown command %r" % line)
                continue
            rc, out = c.run(cur, line, timeout=3600)
            sys.stdout.write(out)
            if out and not out.endswith("\n"):
                sys.stdout.write("\n")
            if rc != 0:
                print("(rc=%d)" % rc)
        except KeyboardInterrupt:
            print("\ninterrupted; the command keeps running in the guest")
        except ClusterError as e:
            print("error: %s" % e)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Boot N PEACH2 nodes under QEMU and run a command on each.",
        epilog="example: %(prog)s --nodes 2 -- 'cat /sys/class/peach2/peach2-0/link_e'")
    ap.add_argument("--nodes", "-n", type=int, default=None,
                    help="number of nodes (default 2, or the topology's)")
    ap.add_argument("--topology", "-t", default=None,
                    help="2, ring:N, double-ring:K or cables:N:0E-1W,...: cables and "
                         "firmware (routing tables) for multi-hop clusters")
    ap.add_argument("--tcp", action="store_true",
                    help="cable over loopback TCP instead of unix sockets")
    ap.add_argument("--link-transport", choices=LINK_TRANSPORTS, default=None,
                    help="shm (default, or $PEACH2_LINK_TRANSPORT): unix-socket cables carry "
                         "their data through shared memory and writes go straight into the "
                         "peer's RAM; shm-ring: the shared-memory rings only; socket: "
                         "through the socket")
    ap.add_argument("--keep", action="store_true",
                    help="keep the run directory (console logs, QEMU stderr) after teardown")
    ap.add_argument("--interactive", "-i", action="store_true", help="prompt for commands")
    ap.add_argument("--timeout", type=float, default=600, help="per-command timeout (s)")
    ap.add_argument("--boot-timeout", type=float, default=120, help="boot timeout (s)")
    ap.add_argument("--qemu", help="QEMU binary (default $PEACH2_QEMU or the cache symlink)")
    ap.add_argument("--kernel", help="guest kernel (default $PEACH2_KERNEL or the cache)")
    ap.add_argument("--initrd", help="initramfs (default $PEACH2_INITRD or build/guest/)")
    ap.add_argument("--guest", choices=GUESTS, default=None,
                    help="debian (default, or $PEACH2_GUEST): Debian userland and management "
                         "network; busybox: the initramfs alone (boots faster)")
    ap.add_argument("--root-image", help="Debian root image (default $PEACH2_ROOT_IMAGE or "
                    "build/guest/debian-root.squashfs)")
    ap.add_argument("--network", dest="network", action="store_true", default=None,
                    help="join the management network (default: with the Debian guest)")
    ap.add_argument("--no-network", dest="network", action="store_false",
                    help="no management network")
    ap.add_argument("--mem", type=int, default=256, help="guest RAM in MiB (default 256)")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--device-prop", action="append", metavar="KEY=VALUE",
                    help="extra property of -device peach2 (repeatable)")
    ap.add_argument("--qemu-arg", action="append", metavar="ARG",
                    help="extra QEMU argument (repeatable; e.g. --qemu-arg=-trace)")
    ap.add_argument("--trace", metavar="DIR",
                    help="every card records its transactions in DIR/nodeN.p2trace; then "
                         "`build/model/peach2-model DIR` predicts the run's time on real "
                         "PEACH2 (docs/timing-model.md)")
    ap.add_argument("--no-device", action="store_true", help="boot without the peach2 card")
    ap.add_argument("--status", action="store_true",
                    help="after the command (or right after boot if none): every node's "
                         "peach2-info as a table, and the cabling drawn to --status-picture")
    ap.add_argument("--status-picture", metavar="FILE", default=None,
                    help="where --status draws the cabling: .png or .svg (default "
                         "peach2-status.png in the current directory); implies --status")
    ap.add_argument("--print-cmdline", action="store_true",
                    help="print each node's QEMU command line and exit")
    ap.add_argument("--mpi", choices=sorted(MPIS), default=None,
                    help="run the command once, on node 0, with mpirun/mpiexec meaning this "
                         "MPI's launcher: ranks go to every node, their traffic over the cards "
                         "(e.g. -- 'mpirun -np 4 mpi_halo.$MPI')")
    ap.add_argument("--copy", action="append", default=[], metavar="SRC[:DEST]",
                    help="copy the host file SRC to DEST (absolute; ending in / or omitted: "
                         "a directory, default /tmp/) in every guest before the command "
                         "(repeatable; mode kept, readable by every guest user)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command to run on every node "
                    "({node} is replaced by the node id)")
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    cmd = " ".join(cmd)
    if a.nodes is not None and a.nodes < 1:
        ap.error("--nodes must be >= 1")
    if a.status_picture:
        a.status = True
    if not cmd and not a.interactive and not a.print_cmdline and not a.status:
        ap.error("give a command after --, --status or --interactive")
    if a.nodes is None and a.topology is None:
        a.nodes = 2
    try:
        copies = [parse_copy(spec) for spec in a.copy]
    except ValueError as e:
        ap.error(str(e))
    c = Cluster(a.nodes, topology=a.topology, transport="tcp" if a.tcp else "unix",
                link_transport=a.link_transport,
                qemu=a.qemu, kernel=a.kernel, initrd=a.initrd,
                boot_timeout=a.boot_timeout, mem=a.mem, append=a.append,
                device_props=_parse_props(a.device_prop), qemu_args=a.qemu_arg or [],
                with_device=not a.no_device, keep=a.keep, guest=a.guest,
                root_image=a.root_image, network=a.network, trace=a.trace, copies=copies)
    if a.print_cmdline:
        c.run_dir = "<run>"
        for i in range(c.n):
            print(" ".join(shlex.quote(x) for x in c.argv(i)))
        return 0
    rc = 0
    try:
        with c:
            if a.interactive:
                rc = _interactive(c)
            elif cmd and a.mpi:
                r, out = c.run(0, mpi_command(a.mpi, cmd), timeout=a.timeout)
                _print_result(0, r, out)
                rc = 1 if r != 0 else 0
            elif cmd:
                for i, (r, out) in enumerate(c.run_all(cmd, timeout=a.timeout)):
                    _print_result(i, r, out)
                    if r != 0:
                        rc = 1
            if a.status:
                _print_status(c, a.status_picture or "peach2-status.png")
            for i in range(c.n):
                for line in c.kernel_problems(i):
                    print("[node%d] kernel problem on the console: %s" % (i, line),
                          file=sys.stderr)
                    rc = 1
    except ClusterError as e:
        print("cluster.py: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Signalled as e:
        die_of(e.signum)
    if a.trace:
        print("cluster.py: traces in %s; predict real PEACH2 time with: "
              "build/model/peach2-model %s" % (c.trace, shlex.quote(c.trace)), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
