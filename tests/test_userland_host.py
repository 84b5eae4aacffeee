"""Host-only tests of the userland pieces: the management network's switch, the
remote-exec agent (peach2-rsh, built and run on the host over loopback), the launcher's
QEMU arguments for the Debian guest, and the guest-root builder's parsing."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from peach2_testlib import REPO, cluster_mod

sys.path.insert(0, os.path.join(REPO, "scripts"))
import mgmtnet  # noqa: E402

RSH_SRC = os.path.join(REPO, "scripts", "guest", "peach2-rsh.c")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="binds privileged ports (root)")


# ---------------------------------------------------------------- the switch

def frame(dst, src, payload=b"x" * 50):
    return dst + src + b"\x08\x00" + payload


def mac(i):
    return bytes.fromhex(mgmtnet.node_mac(i).replace(":", ""))


BCAST = b"\xff" * 6


class Nics:
    """n fake NICs (unix datagram sockets at nic-<i>.sock), as QEMU binds them."""

    def __init__(self, run_dir, n):
        self.socks = []
        for i in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(mgmtnet.nic_path(run_dir, i))
            s.setblocking(False)
            self.socks.append(s)
        self.switch = mgmtnet.switch_path(run_dir)

    def send(self, i, data):
        self.socks[i].sendto(data, self.switch)

    def recv_all(self, i, wait=None):
        """Frames node i receives: one (waiting up to 5 s for it on a busy host, then a
        little longer for any extra), or, with a wait given, all within that time."""
        got = []
        end = time.monotonic() + (wait if wait is not None else 5.0)
        while time.monotonic() < end:
            try:
                got.append(self.socks[i].recv(65536))
                if wait is None:
                    end = min(end, time.monotonic() + 0.2)
            except BlockingIOError:
                time.sleep(0.01)
        return got


@pytest.fixture
def switch(tmp_path):
    """A running switch process for 3 nodes in tmp_path, and its fake NICs."""
    p = subprocess.Popen([sys.executable, os.path.join(REPO, "scripts", "mgmtnet.py"),
                          str(tmp_path), "3"], stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ready"
    nics = Nics(str(tmp_path), 3)
    yield nics
    p.terminate()
    p.wait()


def test_switch_floods_broadcast_then_learns_unicast(switch):
    switch.send(0, frame(BCAST, mac(0), b"who-has"))
    assert switch.recv_all(1) == [frame(BCAST, mac(0), b"who-has")]
    assert switch.recv_all(2) == [frame(BCAST, mac(0), b"who-has")]
    assert switch.recv_all(0, 0.1) == []  # never back to the sender
    # node 1 answers node 0 (known by now): only node 0 gets it
    switch.send(1, frame(mac(0), mac(1), b"is-at"))
    assert switch.recv_all(0) == [frame(mac(0), mac(1), b"is-at")]
    assert switch.recv_all(2, 0.1) == []
    # and node 1 is learnt too
    switch.send(2, frame(mac(1), mac(2), b"to-1"))
    assert switch.recv_all(1) == [frame(mac(1), mac(2), b"to-1")]
    assert switch.recv_all(0, 0.1) == []


def test_switch_drops_frames_from_strangers(switch, tmp_path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(tmp_path / "stranger.sock"))
    s.sendto(frame(BCAST, mac(7)), switch.switch)
    s.sendto(b"short", switch.switch)
    for i in range(3):
        assert switch.recv_all(i, 0.15) == []
    # a runt from a real port is dropped, and the switch still works
    switch.send(0, b"runt")
    switch.send(0, frame(BCAST, mac(0)))
    assert switch.recv_all(1) == [frame(BCAST, mac(0))]


def test_switch_survives_absent_and_full_ports(tmp_path):
    """A node that is down (no socket) or does not read (queue full) loses frames;
    the others still get theirs, and the switch never blocks."""
    p = subprocess.Popen([sys.executable, os.path.join(REPO, "scripts", "mgmtnet.py"),
                          str(tmp_path), "3"], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline().strip() == b"ready"
        nics = Nics(str(tmp_path), 2)          # node 2 never starts
        nics.socks[0].setblocking(True)         # QEMU waits when the switch lags
        nics.socks[0].settimeout(10)
        for k in range(3000):                   # node 1 never reads: its queue fills
            nics.send(0, frame(BCAST, mac(0), b"%06d" % k))
        nics.send(0, frame(BCAST, mac(0), b"last"))
        os.unlink(mgmtnet.nic_path(str(tmp_path), 1))
        nics.socks[1].close()
        late = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        late.bind(mgmtnet.nic_path(str(tmp_path), 2))  # node 2 comes up
        late.settimeout(2)
        nics.send(0, frame(BCAST, mac(0), b"hello-2"))
        # The switch may still be working through the burst when node 2 binds: frames
        # of the burst can reach node 2 first, but hello-2 must follow, in order.
        burst = [frame(BCAST, mac(0), b"%06d" % k) for k in range(3000)]
        burst.append(frame(BCAST, mac(0), b"last"))
        got = late.recv(65536)
        while got != frame(BCAST, mac(0), b"hello-2"):
            assert got in burst
            got = late.recv(65536)
        assert p.poll() is None
    finally:
        p.terminate()
        p.wait()


def test_two_switches_share_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    procs = []
    for d in (a, b):
        d.mkdir()
        procs.append(subprocess.Popen([sys.executable, os.path.join(REPO, "scripts",
                                       "mgmtnet.py"), str(d), "2"], stdout=subprocess.PIPE))
        assert procs[-1].stdout.readline().strip() == b"ready"
    try:
        na, nb = Nics(str(a), 2), Nics(str(b), 2)
        na.send(0, frame(BCAST, mac(0), b"cluster-a"))
        assert na.recv_all(1) == [frame(BCAST, mac(0), b"cluster-a")]
        assert nb.recv_all(0, 0.1) == [] and nb.recv_all(1, 0.1) == []
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def test_address_plan():
    assert mgmtnet.node_ip(0) == "10.32.0.1" and mgmtnet.node_ip(15) == "10.32.0.16"
    macs = {mgmtnet.node_mac(i) for i in range(mgmtnet.MAX_NODES)}
    assert len(macs) == mgmtnet.MAX_NODES
    assert all(int(m.split(":")[0], 16) & 2 for m in macs)  # locally administered
    with pytest.raises(ValueError):
        mgmtnet.Switch("/nonexistent", mgmtnet.MAX_NODES + 1)


# ---------------------------------------------------------------- launcher arguments

def test_debian_guest_argv():
    argv = cluster_mod.qemu_argv(1, 4, "/run/x", "qemu", "/k", "/i",
                                 root_image="/img/root.squashfs", network=True)
    line = " ".join(argv)
    append = argv[argv.index("-append") + 1]
    assert "guest.root=/dev/vda" in append
    assert "guest.net=10.32.0 guest.nodes=4" in append
    # the root image read-only; the NIC on the run directory's switch, no host port
    assert "file=/img/root.squashfs,if=none,id=root,format=raw,readonly=on" in line
    nd = argv[argv.index("-netdev") + 1]
    assert nd == ("dgram,id=mgmt,local.type=unix,local.path=/run/x/nic-1.sock,"
                  "remote.type=unix,remote.path=/run/x/switch.sock")
    assert "mcast" not in line and "port=" not in nd
    assert "mac=52:54:00:32:00:01" in line
    # virtio devices after the card, so the card keeps its PCI slot
    devs = [argv[k + 1] for k, a in enumerate(argv) if a == "-device"]
    assert devs[0].startswith("peach2,")
    assert devs[1:3] == ["virtio-blk-pci,drive=root",
                         "virtio-net-pci,netdev=mgmt,mac=52:54:00:32:00:01"]
    assert devs[3].startswith("virtio-serial-pci,")  # the copy channel
    assert devs[4].startswith("virtserialport,")


def test_busybox_guest_argv_unchanged():
    argv = cluster_mod.qemu_argv(0, 2, "/run/x", "qemu", "/k", "/i")
    line = " ".join(argv)
    assert "guest." not in line and "-netdev" not in argv and "-drive" not in argv


def test_guest_choice(monkeypatch, tmp_path):
    monkeypatch.setenv("PEACH2_BUILD", str(tmp_path))
    monkeypatch.delenv("PEACH2_GUEST", raising=False)
    monkeypatch.delenv("PEACH2_ROOT_IMAGE", raising=False)
    for f in ("qemu", "kernel", "initrd"):
        (tmp_path / f).write_text("")
    files = {f: str(tmp_path / f) for f in ("qemu", "kernel", "initrd")}
    c = cluster_mod.Cluster(2, **files)
    assert c.guest == "debian" and c.network
    assert c.root_image == str(tmp_path / "guest" / "debian-root.squashfs")
    with pytest.raises(cluster_mod.ClusterError, match="make image"):
        c._check_inputs()
    monkeypatch.setenv("PEACH2_GUEST", "busybox")
    c = cluster_mod.Cluster(2)
    assert c.guest == "busybox" and not c.network and c.root_image is None
    assert cluster_mod.Cluster(2, network=True).network
    with pytest.raises(ValueError):
        cluster_mod.Cluster(2, guest="gentoo")


# ---------------------------------------------------------------- the guest root builder

def test_builder_reads_alternatives_like_dpkg(tmp_path):
    """The postinst parser keeps the highest priority per name (mpirun -> Open MPI's 50
    over MPICH's 40) with its slaves, across continuation lines and comments."""
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "bgr", os.path.join(REPO, "scripts", "build-guest-root.py"))
    bgr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bgr)

    def deb(name, postinst):
        d = tmp_path / name
        (d / "DEBIAN").mkdir(parents=True)
        (d / "DEBIAN" / "control").write_text(
            "Package: %s\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
            "Description: t\n" % name)
        (d / "DEBIAN" / "postinst").write_text(postinst)
        (d / "DEBIAN" / "postinst").chmod(0o755)
        subprocess.run(["dpkg-deb", "-b", "-Zgzip", str(d), str(d) + ".deb"], check=True,
                       capture_output=True)
        return str(d) + ".deb"

    a = deb("mpich", "#!/bin/sh\nupdate-alternatives \\\n\t--install /usr/bin/mpirun mpirun "
            "/usr/bin/mpirun.mpich 40 \\\n\t--slave /usr/bin/mpiexec mpiexec "
            "/usr/bin/mpiexec.mpich\n")
    b = deb("openmpi", "#!/bin/sh\nupdate-alternatives \\\n\t--install /usr/bin/mpirun mpirun "
            "/usr/bin/mpirun.openmpi 50 \\\n\t--slave /usr/share/man/man1/mpirun.1.gz x y \\\n"
            "\t--slave /usr/bin/mpiexec mpiexec /usr/bin/mpiexec.openmpi\n")
    best = bgr.alternatives([a, b])
    assert best["mpirun"][0] == 50
    assert ("/usr/bin/mpiexec", "/usr/bin/mpiexec.openmpi") in best["mpirun"][1]
    root = tmp_path / "root"
    (root / "usr/bin").mkdir(parents=True)
    for f in ("mpirun.openmpi", "mpiexec.openmpi"):
        (root / "usr/bin" / f).write_text("")
    made = bgr.link_alternatives(str(root), best)
    assert os.readlink(root / "usr/bin/mpirun") == "/usr/bin/mpirun.openmpi"
    assert os.readlink(root / "usr/bin/mpiexec") == "/usr/bin/mpiexec.openmpi"
    assert not any("man1" in m for m in made)  # the man page target is absent


def test_builder_cache_key_follows_the_list(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "bgr", os.path.join(REPO, "scripts", "build-guest-root.py"))
    bgr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bgr)
    p = tmp_path / "packages.txt"
    p.write_text("# comment\nbash  coreutils # shell\n\nmpich\n")
    assert bgr.read_packages(str(p)) == ["bash", "coreutils", "mpich"]
    k1 = bgr.cache_key(str(p))
    p.write_text("# comment\nbash coreutils\nmpich strace\n")
    assert bgr.cache_key(str(p)) != k1


# ---------------------------------------------------------------- the remote-exec agent

@pytest.fixture(scope="module")
def rsh_bin(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("rsh") / "peach2-rsh")
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out, RSH_SRC],
                   check=True)
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(rsh_bin, allow, log):
    """A server on 127.0.0.1:<free port> accepting `allow`, once it listens."""
    port = free_port()
    p = subprocess.Popen([rsh_bin, "--server", "--listen", "127.0.0.1", "--allow", allow,
                          "--port", str(port), "--log", str(log)])
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)


@pytest.fixture
def rshd(rsh_bin, tmp_path):
    """A server on 127.0.0.1:<free port> accepting 127.0.0.0/8."""
    log = tmp_path / "rshd.log"
    p, port = start_server(rsh_bin, "127.0.0.0/8", log)
    yield port, log
    p.terminate()
    p.wait()


def rsh(rsh_bin, port, *args, **kw):
    return subprocess.run([rsh_bin, "-p", str(port)] + list(args), capture_output=True,
                          text=True, timeout=20, **kw)


@needs_root
def test_rsh_status_streams_and_stdin(rsh_bin, rshd):
    port, _ = rshd
    r = rsh(rsh_bin, port, "-x", "127.0.0.1", "echo out;", "echo err >&2;", "exit 7")
    assert (r.returncode, r.stdout, r.stderr) == (7, "out\n", "err\n")
    data = os.urandom(300000).hex()
    r = rsh(rsh_bin, port, "127.0.0.1", "wc -c", input=data)
    assert r.returncode == 0 and int(r.stdout) == len(data)
    r = rsh(rsh_bin, port, "-n", "127.0.0.1", "cat; echo done", input="ignored")
    assert r.stdout == "done\n"
    r = rsh(rsh_bin, port, "127.0.0.1", "kill -TERM $$")
    assert r.returncode == 128 + signal.SIGTERM


@needs_root
def test_rsh_runs_as_the_requested_user(rsh_bin, rshd):
    port, log = rshd
    r = rsh(rsh_bin, port, "-l", "nobody", "127.0.0.1", "id -u")
    # nobody's login shell is nologin on Debian: the server ran it, as ssh would
    assert r.returncode == 1 and "not available" in r.stdout + r.stderr
    assert "root as nobody" in log.read_text()


def raw_session(port, caller, user, cmd, src_port=None):
    s = socket.socket()
    if src_port:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", src_port))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"PEACH2-RSH 1\n%s\n%s\n%d\n%s" % (caller, user, len(cmd), cmd))
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


@needs_root
def test_rsh_refuses_untrusted_callers(rshd):
    port, log = rshd
    # from an unprivileged port: anyone could have sent it
    out = raw_session(port, b"root", b"root", b"touch /tmp/never")
    assert out.startswith(b"E") and b"privileged port" in out
    # from a privileged port, but a user asking to become another one
    out = raw_session(port, b"nobody", b"root", b"id", src_port=free_priv_port())
    assert out.startswith(b"E") and b"only root may" in out
    out = raw_session(port, b"root", b"no-such-user", b"id", src_port=free_priv_port())
    assert out.startswith(b"E") and b"no such user" in out
    # a bad header
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"SSH-2.0-OpenSSH\r\n")
    assert s.recv(200).startswith(b"E")
    s.close()
    assert "refused" in log.read_text()


def free_priv_port():
    for p in range(900, 600, -1):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            s.close()
            return p
        except OSError:
            s.close()
    pytest.fail("no free privileged port")


@needs_root
def test_rsh_refuses_other_networks(rsh_bin, tmp_path):
    p, port = start_server(rsh_bin, "10.32.0.0/24", tmp_path / "rshd.log")
    try:
        r = rsh(rsh_bin, port, "127.0.0.1", "echo never")
        assert r.returncode == 255 and "not on the management network" in r.stderr
        assert r.stdout == ""
    finally:
        p.terminate()
        p.wait()


@needs_root
def test_rsh_hangs_up_the_command_when_the_client_dies(rsh_bin, rshd, tmp_path):
    port, _ = rshd
    mark = tmp_path / "pid"
    c = subprocess.Popen([rsh_bin, "-p", str(port), "127.0.0.1",
                          "echo $$ > %s; exec sleep 60" % mark])
    deadline = time.monotonic() + 5
    while not (mark.exists() and mark.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int(mark.read_text())
    c.kill()
    c.wait()
    deadline = time.monotonic() + 5
    while os.path.exists("/proc/%d" % pid):
        with open("/proc/%d/stat" % pid) as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        assert time.monotonic() < deadline, "the remote command outlived its client"
        time.sleep(0.05)


def test_rsh_client_errors_are_clear(rsh_bin):
    r = subprocess.run([rsh_bin], capture_output=True, text=True)
    assert r.returncode == 255 and "usage" in r.stderr
    r = subprocess.run([rsh_bin, "no-such-host.invalid", "true"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 255 and "no-such-host.invalid" in r.stderr
