#!/usr/bin/python3
"""A stand-in for qemu-system-x86_64 used by test_launcher.py (no VM, no QEMU).

It understands just enough of the launcher's command line: the console file chardev
(id=con), the command channel socket (id=cmd) and the copy channel socket (id=copy). It
listens on the channel, prints PEACH2-READY and then behaves like scripts/guest/init: runs
each line with `sh -c` on the host and frames the output with "\\n@@RC <rc>\\n";
"poweroff" exits. The copy channel's guest end is a FIFO beside the socket, which the
commands find in PEACH2_COPY_PORT (scripts/guest/peach2-receive, on their PATH): as with
QEMU's virtio-serial port, bytes flow only while a reader has it open, and what a
connection that hung up did not deliver is dropped.
FAKE_QEMU_MODE=die makes it exit at once with a message on stderr;
FAKE_QEMU_MODE=silent never prints READY.
"""

import errno
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

GUEST_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "guest")


def chardev(argv, cid):
    for k, a in enumerate(argv):
        if a == "-chardev" and k + 1 < len(argv):
            parts = argv[k + 1].split(",")
            opts = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            if opts.get("id") == cid:
                return opts
    raise SystemExit("fake_qemu: no chardev %s" % cid)


CHILDREN = []


def hung_up(conn):
    p = select.poll()
    p.register(conn, select.POLLIN)
    return any(ev & (select.POLLHUP | select.POLLERR) for _, ev in p.poll(0))


def serve_copy_channel(path, fifo):
    """The host end of the copy channel: one connection at a time, its bytes into the
    FIFO while a reader holds it open."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    while True:
        conn, _ = s.accept()
        fd = None
        while fd is None and not hung_up(conn):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:  # ENXIO: no reader yet; else drop this one
                    break
                time.sleep(0.01)
        try:
            if fd is not None:
                os.set_blocking(fd, True)
                while not hung_up(conn):
                    data = conn.recv(65536)
                    if not data:
                        break
                    os.write(fd, data)  # blocks while the reader is slow
        except OSError:  # the reader went away (EPIPE)
            pass
        finally:
            if fd is not None:
                os.close(fd)
            conn.close()


def on_term(signum, frame):
    # Like a VM going away: take the "guest" commands with us.
    for c in CHILDREN:
        try:
            os.killpg(c.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(128 + signum)


def main():
    signal.signal(signal.SIGTERM, on_term)
    argv = sys.argv[1:]
    mode = os.environ.get("FAKE_QEMU_MODE", "")
    con = chardev(argv, "con")["path"]
    chan = chardev(argv, "cmd")["path"]
    copy = chardev(argv, "copy")["path"]
    node = argv[argv.index("-append") + 1].split("peach2.node=")[1].split()[0]
    with open(con, "w") as f:
        f.write("fake kernel console of node %s\n" % node)
        if os.environ.get("FAKE_QEMU_CONSOLE"):
            f.write(os.environ["FAKE_QEMU_CONSOLE"] + "\n")
    if mode == "die":
        sys.stderr.write("fake_qemu: -device peach2: simulated startup failure\n")
        sys.exit(1)
    fifo = copy + ".port"
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    threading.Thread(target=serve_copy_channel, args=(copy, fifo), daemon=True).start()
    env = dict(os.environ, PEACH2_COPY_PORT=fifo,
               PATH=GUEST_SCRIPTS + os.pathsep + os.environ.get("PATH", ""))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(chan)
    s.listen(1)
    conn, _ = s.accept()
    time.sleep(0.05)
    if mode == "silent":
        while conn.recv(4096):
            pass
        return
    conn.sendall(b"fake banner line\nPEACH2-READY node=%s\n" % node.encode())
    f = conn.makefile("rb")
    for line in f:
        cmd = line.decode().rstrip("\n")
        if cmd == "poweroff":
            break
        child = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.DEVNULL,
                                 stdout=conn.fileno(), stderr=subprocess.STDOUT,
                                 start_new_session=True, env=env)
        CHILDREN.append(child)
        rc = child.wait()
        CHILDREN.remove(child)
        conn.sendall(b"\n@@RC %d\n" % rc)
    conn.close()


if __name__ == "__main__":
    main()
