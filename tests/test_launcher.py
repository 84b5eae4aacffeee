"""Host-only tests of scripts/cluster.py: cabling plan, QEMU command lines, and the
launcher's lifecycle against a fake QEMU (tests/fake_qemu.py). No VM is booted."""

import os
import re
import subprocess
import sys
import time

import pytest

from peach2_testlib import TESTS, cluster_mod as cm

FAKE_QEMU = os.path.join(TESTS, "fake_qemu.py")
RUN = "/tmp/peach2-unit"  # never created: the plan is pure


def parse_chardevs(argv):
    """{id: {opt: value, '_backend': kind}} of every -chardev in argv."""
    out = {}
    for k, a in enumerate(argv):
        if a == "-chardev":
            parts = argv[k + 1].split(",")
            opts = {"_backend": parts[0]}
            for p in parts[1:]:
                key, _, v = p.partition("=")
                opts[key] = v
            assert opts["id"] not in out, "duplicate chardev id %s" % opts["id"]
            out[opts["id"]] = opts
    return out


def parse_device(argv):
    devs = [argv[k + 1] for k, a in enumerate(argv)
            if a == "-device" and argv[k + 1].startswith("peach2,")]
    assert len(devs) == 1, devs
    name, *props = devs[0].split(",")
    assert name == "peach2"
    return dict(p.split("=", 1) for p in props)


def plan(n):
    return [cm.qemu_argv(i, n, RUN, "qemu", "vmlinuz", "initrd") for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_cabling_topology(n):
    cables = cm.cabling(n)
    if n == 2:
        assert cables == [((0, "E"), (1, "W"))]
    else:
        assert len(cables) == n
        assert sorted(cables) == sorted(((i, "E"), ((i + 1) % n, "W")) for i in range(n))
    ends = [e for c in cables for e in c]
    assert len(ends) == len(set(ends)), "a port has two cables"


def test_cabling_one_node():
    assert cm.cabling(1) == []
    with pytest.raises(ValueError):
        cm.cabling(0)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_link_chardevs(n):
    argvs = plan(n)
    servers, clients = {}, {}
    for i, argv in enumerate(argvs):
        chardevs = parse_chardevs(argv)
        dev = parse_device(argv)
        assert dev["node-id"] == str(i)
        assert dev["nodes"] == str(n)
        for key in [k for k in dev if k.startswith("port-")]:
            cid = dev[key]
            assert cid in chardevs, "node%d %s=%s has no chardev" % (i, key, cid)
            ch = chardevs[cid]
            assert ch["_backend"] == "socket"
            path = ch["path"]
            assert os.path.dirname(path) == RUN, "socket outside the run dir: %s" % path
            assert path.endswith(".sock")
            port = key[len("port-"):].upper()
            if ch.get("server") == "on":
                assert ch.get("wait") == "off"
                assert "reconnect" not in ch
                servers.setdefault(path, []).append((i, port))
            else:
                assert ch.get("reconnect") == "1"
                assert "server" not in ch
                clients.setdefault(path, []).append((i, port))
        # every link chardev is used by the device
        link_ids = {cid for cid, ch in chardevs.items()
                    if cid not in ("con", "cmd", "info", "copy")}
        assert link_ids == {dev[k] for k in dev if k.startswith("port-")}
    cables = cm.cabling(n)
    assert len(servers) == len(cables) and set(servers) == set(clients)
    for path in servers:
        assert len(servers[path]) == 1 and len(clients[path]) == 1, path
        (a, pa), (b, pb) = servers[path][0], clients[path][0]
        assert ((a, pa), (b, pb)) in cables
    if n == 2:
        assert "port-w" not in parse_device(argvs[0])
        assert "port-e" not in parse_device(argvs[1])
    else:
        for argv in argvs:
            dev = parse_device(argv)
            assert "port-e" in dev and "port-w" in dev and "port-s" not in dev


def test_qemu_argv_basics():
    argv = cm.qemu_argv(1, 2, RUN, "/q", "/k", "/i", extra_args=["-trace", "peach2*"],
                        device_props={"foo": "bar"})
    s = " ".join(argv)
    for frag in ["-machine q35", "-accel tcg", "-m 256", "-smp 1", "-display none",
                 "-vga none", "-monitor none", "-nodefaults", "-no-reboot", "-nic none",
                 "-kernel /k", "-initrd /i", "-global q35-pcihost.pci-hole64-size=64G",
                 "-L /usr/share/seabios", "-L /usr/lib/ipxe/qemu", "-L /usr/share/qemu"]:
        assert frag in s, frag
    assert argv[0] == "/q"
    append = argv[argv.index("-append") + 1]
    assert append == "console=ttyS0 loglevel=4 panic=-1 tsc=reliable peach2.node=1"
    assert argv[-2:] == ["-trace", "peach2*"]
    assert parse_device(argv)["foo"] == "bar"
    # serial 0 = console file, serial 1 = command socket, serial 2 = status socket
    serials = [argv[k + 1] for k, a in enumerate(argv) if a == "-serial"]
    assert serials == ["chardev:con", "chardev:cmd", "chardev:info"]
    ch = parse_chardevs(argv)
    assert ch["con"]["_backend"] == "file" and ch["con"]["path"].startswith(RUN + "/")
    assert ch["cmd"]["server"] == "on" and ch["cmd"]["wait"] == "off"
    assert ch["cmd"]["path"].startswith(RUN + "/")


def test_link_transport_property():
    """Unix cables carry data through shared memory unless the socket is asked for;
    TCP cables never do (no file descriptors cross TCP)."""
    dev = lambda **kw: parse_device(cm.qemu_argv(0, 2, RUN, "/q", "/k", "/i", **kw))  # noqa: E731
    assert dev()["link-shm"] == "on"
    assert dev()["link-direct"] == "on"
    assert dev(link_transport="shm-ring")["link-shm"] == "on"
    assert dev(link_transport="shm-ring")["link-direct"] == "off"
    assert dev(link_transport="socket")["link-shm"] == "off"
    assert dev(tcp_ports=[4000])["link-direct"] == "off"
    # Direct writes need guest RAM the peer can map: a shared memfd backend.
    argv = cm.qemu_argv(0, 2, RUN, "/q", "/k", "/i")
    assert "memory-backend-memfd,id=ram0,size=256M,share=on" in argv
    assert "q35,memory-backend=ram0" in argv
    assert "memory-backend-memfd,id=ram0,size=256M,share=on" not in cm.qemu_argv(
        0, 2, RUN, "/q", "/k", "/i", link_transport="shm-ring")
    assert dev(tcp_ports=[4000])["link-shm"] == "off"
    assert dev(device_props={"link-shm": "off"})["link-shm"] == "off"
    with pytest.raises(ValueError):
        cm.Cluster(2, link_transport="pigeon")


def test_no_device():
    argv = cm.qemu_argv(0, 2, RUN, "/q", "/k", "/i", with_device=False)
    assert not any(a.startswith("peach2") for a in argv if a != "peach2*")
    assert set(parse_chardevs(argv)) == {"con", "cmd", "info", "copy"}


@pytest.mark.parametrize("with_device", [True, False])
def test_copy_channel_is_a_virtio_serial_port_after_the_card(with_device):
    argv = cm.qemu_argv(1, 2, RUN, "/q", "/k", "/i", with_device=with_device)
    devs = [argv[k + 1] for k, a in enumerate(argv) if a == "-device"]
    port = [d for d in devs if d.startswith("virtserialport,")]
    assert len(port) == 1 and "name=%s" % cm.COPY_PORT_NAME in port[0]
    assert "chardev=copy" in port[0]
    copy = parse_chardevs(argv)["copy"]
    assert copy["_backend"] == "socket" and copy["server"] == "on" and copy["wait"] == "off"
    assert copy["path"] == cm.node_paths(RUN, 1)["copy"]
    if with_device:  # the card keeps its PCI address: it comes first
        assert devs[0].startswith("peach2,")


def test_trace_dir_goes_to_every_card(tmp_path):
    d = tmp_path / "traces"
    c = cm.Cluster(3, guest="busybox", trace=str(d), device_props=lambda i: (
        {"trace": "/elsewhere"} if i == 2 else {}))
    c.run_dir = RUN
    assert [parse_device(c.argv(i)).get("trace") for i in range(3)] == [
        str(d), str(d), "/elsewhere"]  # the caller's own property wins
    c = cm.Cluster(2, guest="busybox", trace="rel/dir")
    c.run_dir = RUN
    assert parse_device(c.argv(0))["trace"] == os.path.abspath("rel/dir")
    c = cm.Cluster(2, guest="busybox")
    c.run_dir = RUN
    assert "trace" not in parse_device(c.argv(0))  # off by default
    with pytest.raises(ValueError, match="comma"):
        cm.Cluster(2, guest="busybox", trace="/tmp/a,b")


def test_bad_paths_rejected():
    with pytest.raises(cm.ClusterError):
        cm.qemu_argv(0, 2, "/tmp/a,b", "/q", "/k", "/i")
    with pytest.raises(cm.ClusterError):
        cm.qemu_argv(0, 2, "/tmp/" + "x" * 120, "/q", "/k", "/i")


def test_defaults_follow_lib_sh(monkeypatch):
    monkeypatch.setenv("PEACH2_CACHE", "/c")
    for v in ("PEACH2_QEMU", "PEACH2_KERNEL", "PEACH2_INITRD", "PEACH2_GUEST_KVER",
              "PEACH2_QEMU_VERSION", "PEACH2_BUILD"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("PEACH2_BUILD", "/nonexistent-build")
    assert cm.default_qemu() == "/c/qemu-7.2/bin/qemu-system-x86_64"
    assert cm.default_kernel() == "/c/guest/vmlinuz-6.1.0-56-amd64"
    assert cm.default_initrd() == "/nonexistent-build/guest/initramfs.cpio.gz"
    monkeypatch.setenv("PEACH2_QEMU", "/x/qemu")
    assert cm.default_qemu() == "/x/qemu"


def test_default_qemu_is_this_checkouts_build(monkeypatch, tmp_path):
    monkeypatch.delenv("PEACH2_QEMU", raising=False)
    monkeypatch.setenv("PEACH2_CACHE", "/c")
    monkeypatch.setenv("PEACH2_BUILD", str(tmp_path))
    assert cm.default_qemu() == "/c/qemu-7.2/bin/qemu-system-x86_64"
    (tmp_path / "qemu-system-x86_64").symlink_to("/c/qemu-7.2/bin/qemu-system-x86_64-0123")
    assert cm.default_qemu() == str(tmp_path / "qemu-system-x86_64")


def test_initrd_default(monkeypatch, tmp_path):
    monkeypatch.delenv("PEACH2_INITRD", raising=False)
    monkeypatch.setenv("PEACH2_BUILD", str(tmp_path))
    (tmp_path / "guest").mkdir()
    assert cm.default_initrd() == str(tmp_path / "guest" / "initramfs.cpio.gz")
    (tmp_path / "guest" / "initramfs.cpio").write_text("cpio")
    assert cm.default_initrd() == str(tmp_path / "guest" / "initramfs.cpio")
    monkeypatch.setenv("PEACH2_INITRD", "/i")
    assert cm.default_initrd() == "/i"


def test_kernel_prefers_pvh_vmlinux(monkeypatch, tmp_path):
    monkeypatch.setenv("PEACH2_CACHE", str(tmp_path))
    monkeypatch.delenv("PEACH2_KERNEL", raising=False)
    monkeypatch.setenv("PEACH2_GUEST_KVER", "9.9-test")
    (tmp_path / "guest").mkdir()
    assert cm.default_kernel() == str(tmp_path / "guest" / "vmlinuz-9.9-test")
    (tmp_path / "guest" / "vmlinux-9.9-test").write_text("elf")
    assert cm.default_kernel() == str(tmp_path / "guest" / "vmlinux-9.9-test")
    monkeypatch.setenv("PEACH2_KERNEL", "/k")
    assert cm.default_kernel() == "/k"


# ---- lifecycle against the fake QEMU --------------------------------------------

@pytest.fixture
def fake(tmp_path, monkeypatch):
    k = tmp_path / "vmlinuz"
    i = tmp_path / "initrd"
    k.write_text("k")
    i.write_text("i")
    parent = tmp_path / "runs"
    parent.mkdir()

    def make(n, **kw):
        return cm.Cluster(n, qemu=FAKE_QEMU, kernel=str(k), initrd=str(i),
                          run_parent=str(parent), verbose=False, **kw)
    make.parent = parent
    return make


def _fake_procs():
    r = subprocess.run(["pgrep", "-f", FAKE_QEMU], stdout=subprocess.PIPE, text=True)
    return r.stdout.split()


@pytest.mark.parametrize("n", [2, 3])
def test_lifecycle(fake, n):
    c = fake(n)
    with c:
        run_dir = c.run_dir
        assert os.path.isdir(run_dir)
        assert sorted(c.boot_times) == list(range(n))
        assert all(nd.ready_id == str(nd.index) for nd in c.nodes)
        assert c.nodes[0].banner == "fake banner line\n"
        assert c.run(0, "echo hello") == (0, "hello\n")
        assert c.run(1, "printf abc") == (0, "abc")          # no trailing newline kept exact
        assert c.run(1, "echo err >&2; exit 3") == (3, "err\n")
        assert c.run(0, "printf 'x\\n\\n'") == (0, "x\n\n")
        res = c.run_all("echo node={node}")
        assert res == [(0, "node=%d\n" % i) for i in range(n)]
        assert "fake kernel console of node 1" in c.console_log(1)
        assert c.kernel_problems(1) == []
    assert not os.path.exists(run_dir)
    assert _fake_procs() == []


def test_command_timeout_then_recovers(fake):
    with fake(2) as c:
        with pytest.raises(cm.CommandTimeout) as ei:
            c.run(0, "echo started; sleep 1.5; echo done", timeout=0.5)
        assert "started" in ei.value.output
        # the next command first drains the late output of the timed-out one
        assert c.run(0, "echo next", timeout=10) == (0, "next\n")


def test_restart_node(fake):
    with fake(2) as c:
        c.kill_node(1)
        with pytest.raises(cm.ClusterError):
            c.run(1, "true", timeout=5)
        t = c.restart_node(1)
        assert t > 0
        assert c.run(1, "echo back") == (0, "back\n")
        assert "restart 1" in c.console_log(1)


def test_early_exit_reports_stderr(fake, monkeypatch):
    monkeypatch.setenv("FAKE_QEMU_MODE", "die")
    c = fake(2)
    with pytest.raises(cm.ClusterError) as ei:
        c.start()
    assert "simulated startup failure" in str(ei.value)
    assert os.listdir(fake.parent) == []
    assert _fake_procs() == []


def test_boot_timeout(fake, monkeypatch):
    monkeypatch.setenv("FAKE_QEMU_MODE", "silent")
    c = fake(2, boot_timeout=1.5)
    with pytest.raises(cm.ClusterError) as ei:
        c.start()
    assert "no PEACH2-READY" in str(ei.value)
    assert os.listdir(fake.parent) == []
    assert _fake_procs() == []


def test_kernel_problem_detection(fake, monkeypatch):
    monkeypatch.setenv("FAKE_QEMU_CONSOLE", "BUG: kernel NULL pointer dereference")
    with fake(2) as c:
        assert c.kernel_problems(0) == ["BUG: kernel NULL pointer dereference"]


CLUSTER_PY = os.path.join(cm.REPO, "scripts", "cluster.py")


def cli_env(tmp_path, runtime_dir=None):
    """Environment for running scripts/cluster.py against the fake QEMU (dummy kernel and
    initrd in tmp_path; run directories under runtime_dir, default tmp_path)."""
    k, i = tmp_path / "k", tmp_path / "i"
    k.write_text("k")
    i.write_text("i")
    return dict(os.environ, PEACH2_QEMU=FAKE_QEMU, PEACH2_KERNEL=str(k), PEACH2_INITRD=str(i),
                XDG_RUNTIME_DIR=str(runtime_dir or tmp_path))


def test_cli_runs_command(tmp_path):
    env = cli_env(tmp_path)
    script = CLUSTER_PY
    r = subprocess.run([sys.executable, script, "--nodes", "3", "--", "echo", "hi", "{node}"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[node0] hi 0", "[node1] hi 1", "[node2] hi 2"]
    r = subprocess.run([sys.executable, script, "--nodes", "2", "--", "exit {node}"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert "[node1] (rc=1)" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["i", "k"]  # no run dir left behind


def test_cli_trace_creates_the_directory_and_names_the_model(tmp_path):
    env = cli_env(tmp_path)
    script = CLUSTER_PY
    traces = tmp_path / "traces" / "run1"
    r = subprocess.run([sys.executable, script, "--nodes", "2", "--guest", "busybox",
                        "--trace", str(traces), "--", "true"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert traces.is_dir()
    assert "peach2-model %s" % traces in r.stderr


@pytest.mark.parametrize("sig", ["TERM", "HUP", "INT"])
def test_cli_signal_cleans_up(tmp_path, sig):
    import signal
    import time
    runs = tmp_path / "runs"
    runs.mkdir()
    env = cli_env(tmp_path, runs)
    script = CLUSTER_PY
    # The launcher must see the signal's default disposition even when this test runs
    # where it is ignored: a shell's background job ignores SIGINT (Python then installs
    # no KeyboardInterrupt handler), `nohup make check` ignores SIGHUP (and the launcher
    # rightly keeps ignoring it: that was make check's HUP "hang").
    def default_dispositions():
        for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
            signal.signal(s, signal.SIG_DFL)
    p = subprocess.Popen([sys.executable, script, "--nodes", "2", "--", "sleep 30"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_dispositions)
    deadline = time.monotonic() + 20
    # wait until both fake nodes run the command
    while time.monotonic() < deadline:
        r = subprocess.run(["pgrep", "-f", "sleep 30"], stdout=subprocess.PIPE, text=True)
        # The launcher's own command line has "sleep 30" too: count the nodes only.
        if len([x for x in r.stdout.split() if int(x) != p.pid]) >= 2:
            break
        time.sleep(0.1)
    else:
        p.kill()
        pytest.fail("fake nodes never started the command")
    p.send_signal(getattr(signal, "SIG" + sig))
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        # Leave nothing behind for the next case to trip over.
        p.kill()
        out, err = p.communicate()
        for pid in _fake_procs():
            os.kill(int(pid), signal.SIGKILL)
        pytest.fail("the launcher still ran 20 s after SIG%s; its stderr:\n%s" % (sig, err))
    assert p.returncode != 0
    assert os.listdir(runs) == [], "run dir left behind"
    assert _fake_procs() == [], "fake QEMU left running"


def test_wait_for_survives_trimming_a_large_buffer():
    """More than 1 MiB of output before a marker: the buffer is trimmed after the
    match, and the match's groups must still be the ones found."""
    import threading
    import time
    nd = cm.Node.__new__(cm.Node)
    nd.buf = bytearray(b"x" * (1 << 20) + b"tail\n@@RC 42\n")
    nd.pos = 0
    nd.eof = False
    nd.cond = threading.Condition()
    nd.index = 0
    nd.alive = lambda: True
    m, before = nd.wait_for(cm.RC_RE, time.monotonic() + 1, "rc")
    assert int(m.group(1)) == 42
    assert before.endswith(b"tail")
    assert nd.pos == 0 and nd.buf == bytearray()


def test_cli_mpi_runs_once_on_node0_with_that_mpis_launcher(tmp_path):
    """--mpi: the command runs on node 0 only, `mpirun` is the chosen MPI's launcher."""
    env = cli_env(tmp_path)
    for mpi, launcher in (("mpich", "/usr/bin/mpiexec.mpich"), ("openmpi", "/usr/bin/mpirun.openmpi")):
        r = subprocess.run([sys.executable, CLUSTER_PY, "--nodes", "2", "--mpi", mpi, "--",
                            'echo $MPI; cat "${PATH%%:*}/mpirun" "${PATH%%:*}/mpiexec"'],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        run = '[node0] exec %s "$@"' % launcher
        assert r.stdout.splitlines() == ["[node0] " + mpi, "[node0] #!/bin/sh", run,
                                         "[node0] #!/bin/sh", run], r.stdout
    with pytest.raises(ValueError):
        cm.mpi_command("mvapich", "true")


# ---- host files into the guests (--copy, Cluster.copy_in) ----------------------------

def test_parse_copy(tmp_path):
    f = tmp_path / "ring"
    f.write_bytes(b"x")
    assert cm.parse_copy("%s:/opt/bin/ring2" % f) == (str(f), "/opt/bin/ring2")
    assert cm.parse_copy(str(f)) == (str(f), "/tmp/ring")          # default: /tmp/, same name
    assert cm.parse_copy("%s:/opt/" % f) == (str(f), "/opt/ring")   # a directory keeps the name
    for spec, why in (("%s/missing:/tmp/m" % tmp_path, "No such file"),
                      ("%s:/tmp/d" % tmp_path, "not a regular file"),
                      ("%s:tmp/ring" % f, "not absolute"),
                      (":/tmp/x", "no host file")):
        with pytest.raises(ValueError, match=why):
            cm.parse_copy(spec)


def test_guest_mode_keeps_the_bits_and_lets_everyone_read():
    assert cm.guest_mode(0o100755) == 0o755
    assert cm.guest_mode(0o100700) == 0o755   # an owner's program: everyone may run it
    assert cm.guest_mode(0o100600) == 0o644
    assert cm.guest_mode(0o104750) == 0o755   # no setuid/setgid/sticky bit in the guest
    assert cm.guest_mode(0o100640) == 0o644


def test_copy_in_moves_every_byte_to_every_node(fake, tmp_path):
    """Over the copy channels (the fake's FIFOs); the fake nodes share the host's file
    system, so each node writes its own temporary file and the last rename wins with equal
    bytes."""
    data = os.urandom((3 << 20) + 123)
    src = tmp_path / "prog"
    src.write_bytes(data)
    src.chmod(0o700)
    small = tmp_path / "notes.txt"
    small.write_text("hello\n")
    small.chmod(0o600)
    out = tmp_path / "guest" / "new" / "dir"
    with fake(2, copies=[(str(src), str(out) + "/"), (str(small), str(out / "n.txt"))]) as c:
        assert (out / "prog").read_bytes() == data
        assert (out / "prog").stat().st_mode & 0o7777 == 0o755
        assert (out / "n.txt").read_text() == "hello\n"
        assert (out / "n.txt").stat().st_mode & 0o7777 == 0o644
        assert sorted(os.listdir(out)) == ["n.txt", "prog"]   # no temporary file left
        # an empty file, through the API, to one node
        empty = tmp_path / "empty"
        empty.write_bytes(b"")
        assert c.copy_in(str(empty), str(out / "e"), nodes=[1]) == str(out / "e")
        assert (out / "e").read_bytes() == b""
        # a copy that cannot be written: a clear error, nothing left behind
        blocker = tmp_path / "afile"
        blocker.write_text("")
        with pytest.raises(cm.ClusterError, match=r"node\d: copying .*prog to .*afile/x failed"):
            c.copy_in(str(src), str(blocker / "x"))
        assert c.run(0, "echo still") == (0, "still\n")
        # a restarted node gets the cluster's copies again
        (out / "prog").unlink()
        c.restart_node(1)
        assert (out / "prog").read_bytes() == data


def test_copy_bad_src_fails_before_boot(fake, tmp_path):
    with pytest.raises(ValueError, match="No such file"):
        fake(2, copies=[(str(tmp_path / "nope"), "/tmp/nope")])
    assert _fake_procs() == []


def test_cli_copy(tmp_path):
    env = cli_env(tmp_path)
    src = tmp_path / "ring.sh"
    src.write_text("#!/bin/sh\necho ring on node $1\n")
    src.chmod(0o755)
    dest = tmp_path / "g" / "ring"
    r = subprocess.run([sys.executable, CLUSTER_PY, "--nodes", "2", "--copy",
                        "%s:%s" % (src, dest), "--", "%s {node}" % dest],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[node0] ring on node 0", "[node1] ring on node 1"]
    assert "copied %s to %s" % (src, dest) in r.stderr
    # a missing file: a usage error naming it, no cluster booted
    r = subprocess.run([sys.executable, CLUSTER_PY, "--nodes", "2", "--copy",
                        "%s/absent:/tmp/a" % tmp_path, "--", "true"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "copy %s/absent: No such file or directory" % tmp_path in r.stderr
    assert not any(p.startswith("peach2-") for p in os.listdir(tmp_path))
    # a copy that fails in the guest: exit 2, the node's error on stderr
    r = subprocess.run([sys.executable, CLUSTER_PY, "--nodes", "2", "--copy",
                        "%s:%s/x" % (src, src), "--", "true"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert re.search(r"cluster.py: node\d: copying .*ring.sh to .*ring.sh/x failed", r.stderr), r.stderr
    assert _fake_procs() == []


def test_receive_gives_up_at_its_deadline(tmp_path):
    """scripts/guest/peach2-receive with a host end that stalls after 3 of 10 bytes: it
    ends at its deadline with what it got, and leaves no file behind (a blocked read must
    not outlive the deadline: the launcher's next command waits for it)."""
    fifo = tmp_path / "port"
    os.mkfifo(fifo)
    stall = subprocess.Popen(["sh", "-c", 'exec 3>"$0"; printf abc >&3; sleep 30', str(fifo)])
    try:
        t0 = time.monotonic()
        r = subprocess.run([os.path.join(cm.REPO, "scripts", "guest", "peach2-receive"), "10", "0" * 64,
                            "644", str(tmp_path / "out" / "f"), "2"],
                           env=dict(os.environ, PEACH2_COPY_PORT=str(fifo)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        took = time.monotonic() - t0
    finally:
        stall.kill()
        stall.wait()
    assert r.returncode == 1
    # (3 or 0: a head(1) killed at the deadline may not have written what it read)
    assert re.search(r"peach2-receive: received [03] of 10 bytes in 2 s", r.stderr), r.stderr
    assert took < 6, took
    assert os.listdir(tmp_path / "out") == []
