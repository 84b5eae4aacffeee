#!/usr/bin/python3
"""A stand-in for qemu-system-x86_64 used by test_launcher.py (no VM, no QEMU).

It understands just enough of the launcher's command line: the console file chardev
(id=con) and the command channel socket (id=cmd). It listens on the channel, prints
PEACH2-READY and then behaves like scripts/guest/init: runs each line with `sh -c`
on the host and frames the output with "\\n@@RC <rc>\\n"; "poweroff" exits.
FAKE_QEMU_MODE=die makes it exit at once with a message on stderr;
FAKE_QEMU_MODE=silent never prints READY.
"""

import os
import signal
import socket
import subprocess
import sys
import time


def chardev(argv, cid):
    for k, a in enumerate(argv):
        if a == "-chardev" and k + 1 < len(argv):
            parts = argv[k + 1].split(",")
            opts = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            if opts.get("id") == cid:
                return opts
    raise SystemExit("fake_qemu: no chardev %s" % cid)


CHILDREN = []


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
    node = argv[argv.index("-append") + 1].split("peach2.node=")[1].split()[0]
    with open(con, "w") as f:
        f.write("fake kernel console of node %s\n" % node)
        if os.environ.get("FAKE_QEMU_CONSOLE"):
            f.write(os.environ["FAKE_QEMU_CONSOLE"] + "\n")
    if mode == "die":
        sys.stderr.write("fake_qemu: -device peach2: simulated startup failure\n")
        sys.exit(1)
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
                                 start_new_session=True)
        CHILDREN.append(child)
        rc = child.wait()
        CHILDREN.remove(child)
        conn.sendall(b"\n@@RC %d\n" % rc)
    conn.close()


if __name__ == "__main__":
    main()
