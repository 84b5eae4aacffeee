"""VM tests of the Debian guest: Debian's programs start, the management network joins
every node of a ring by name, MPI launches ranks on two nodes through peach2-rsh and
they talk over TCP (Open MPI and MPICH: the baseline that MPI over the cards must beat),
two clusters on one host do not see each other, and host files reach the guests over the
copy channel."""

import hashlib
import os
import time

import pytest

from peach2_testlib import check, cluster_mod, wait_sysfs, wait_until

pytestmark = pytest.mark.vm

# A trivial MPI program for MPICH, whose Debian build has no Python binding: mpi4py is
# built for Open MPI only, so MPICH's C API is called through ctypes (MPICH's ABI
# constants from its mpi.h: MPI_COMM_WORLD, MPI_INT, MPI_SUM).
MPICH_ALLREDUCE = (
    "import ctypes as C, socket; m = C.CDLL('libmpich.so.12', C.RTLD_GLOBAL); "
    "W, INT, SUM = 0x44000000, 0x4c000405, 0x58000003; m.MPI_Init(None, None); "
    "r, n, s = C.c_int(), C.c_int(), C.c_int(); m.MPI_Comm_rank(W, C.byref(r)); "
    "m.MPI_Comm_size(W, C.byref(n)); v = C.c_int(r.value + 1); "
    "m.MPI_Allreduce(C.byref(v), C.byref(s), 1, INT, SUM, W); "
    "print('rank', r.value, 'of', n.value, 'on', socket.gethostname(), 'sum', s.value); "
    "m.MPI_Finalize()")
OMPI_ALLREDUCE = (
    "from mpi4py import MPI; import socket; c = MPI.COMM_WORLD; "
    "print('rank', c.rank, 'of', c.size, 'on', socket.gethostname(), "
    "'sum', c.allreduce(c.rank + 1))")


def test_debian_programs_start(cluster2):
    c = cluster2
    assert c.guest == "debian"
    # Debian's ibv_devinfo finds the card through the project's Verbs library, which
    # lies over Debian's libibverbs.so.1 (tests/test_verbs.py tests it further)
    assert "peach2_0" in check(c, 0, "ibv_devinfo -l")
    assert "Open MPI" in check(c, 0, "mpirun --version")
    assert "HYDRA" in check(c, 0, "mpiexec.mpich --version")
    out = check(c, 0, "ucx_info -v")
    assert "UCX" in out or "Version" in out, out
    assert check(c, 0, "python3 -c 'import mpi4py; print(mpi4py.__version__)'").strip()
    for prog in ("ib_write_bw", "ib_send_lat", "NPopenmpi", "ucx_perftest", "bash"):
        check(c, 0, "command -v %s" % prog)
    # dpkg knows what is installed
    assert "ii  openmpi-bin" in check(c, 0, "dpkg -l openmpi-bin")
    # the project's layer lies over Debian: driver bound, our tools on PATH
    check(c, 1, "test -c /dev/peach2-0 && command -v tca_bench && command -v tca_check && test -x /selftests/peach2_dma_test")


def test_guest_user(cluster2):
    """A non-root user exists, may open the card (group tca, also after the driver binds
    again) and gets no root powers."""
    c = cluster2
    pci = check(c, 0, "basename $(readlink /sys/class/peach2/peach2-0/device)").strip()
    check(c, 0, "echo %s > /sys/bus/pci/drivers/peach2/unbind && "
                "echo %s > /sys/bus/pci/drivers/peach2/bind" % (pci, pci))
    wait_until(lambda: c.run(0, "stat -c %G /dev/peach2-0")[1].strip() == "tca",
               what="node0's new /dev/peach2-0 in group tca")
    wait_sysfs(c, 0, "link_e", lambda v: v.startswith("up"))
    out = check(c, 0, "su user -c 'id; cat /sys/class/peach2/peach2-0/node_id; "
                      "exec 3</dev/peach2-0 && echo opened; touch /etc/x' 2>&1; true")
    assert "uid=1000(user)" in out and "(tca)" in out, out
    assert "opened" in out, out
    assert "Permission denied" in out, out
    # as the user, peach2-rsh runs commands as the user, and never as root
    out = check(c, 0, "su user -c 'peach2-rsh node1 id -un'")
    assert out.strip() == "user"
    rc, out = c.run(0, "su user -c 'peach2-rsh -l root node1 id'")
    assert rc == 255 and "only root may" in out, out


@pytest.fixture(scope="module")
def ring4(make_cluster):
    return make_cluster(None, topology="ring:4")


def test_names_and_tcp_between_all_nodes_of_a_ring(ring4):
    c = ring4
    n = c.n
    # every node resolves every name to its management address and reaches it by TCP
    # (a peach2-rsh session is a TCP connection to the named node)
    res = c.run_all(lambda i: "for j in %s; do getent hosts node$j || grep -w node$j "
                    "/etc/hosts; peach2-rsh node$j hostname; done" % " ".join(map(str, range(n))),
                    timeout=120)
    for i, (rc, out) in enumerate(res):
        assert rc == 0, "node%d: %s" % (i, out)
        for j in range(n):
            assert "10.32.0.%d" % (j + 1) in out and "node%d\n" % j in out, (i, out)
        assert out.count("\nnode") + out.startswith("node") >= n
    # a stream of data from each node to the next, checked end to end
    res = c.run_all(lambda i: "head -c 300000 /dev/urandom > /tmp/blob && sha256sum </tmp/blob "
                    "&& peach2-rsh node%d sha256sum </tmp/blob" % ((i + 1) % n), timeout=300)
    for i, (rc, out) in enumerate(res):
        lines = out.split()
        assert rc == 0 and lines[0] == lines[2], "node%d: %s" % (i, out)
    # ICMP too, and the card links are still up beside the management network
    check(c, 0, "for j in 1 2 3; do ping -c 1 -W 5 node$j >/dev/null || exit 1; done")


def test_mpirun_two_nodes_over_tcp(cluster2):
    """Open MPI's mpirun and MPICH's mpiexec start one rank per node through peach2-rsh;
    the ranks exchange data over TCP on the management network."""
    c = cluster2
    out = check(c, 0, "mpirun -H node0,node1 -np 2 hostname", timeout=300)
    assert sorted(out.split()) == ["node0", "node1"], out
    out = check(c, 0, "mpirun --mca btl tcp,self --mca pml ob1 -H node0,node1 -np 2 "
                      "python3 -c \"%s\"" % OMPI_ALLREDUCE, timeout=300)
    lines = sorted(l for l in out.splitlines() if l.startswith("rank"))
    assert lines == ["rank 0 of 2 on node0 sum 3", "rank 1 of 2 on node1 sum 3"], out
    out = check(c, 0, "mpiexec.mpich -hosts node0,node1 -n 2 hostname", timeout=300)
    assert sorted(out.split()) == ["node0", "node1"], out
    # MPICH speaks UCX only, which the guests keep on the cards (/etc/ucx/ucx.conf):
    # the management network has to be asked for
    out = check(c, 0, "mpiexec.mpich -hosts node0,node1 -n 2 -genv UCX_TLS tcp,self "
                      "-genv UCX_NET_DEVICES eth0 python3 -c \"%s\"" % MPICH_ALLREDUCE,
                timeout=300)
    lines = sorted(l for l in out.splitlines() if l.startswith("rank"))
    assert lines == ["rank 0 of 2 on node0 sum 3", "rank 1 of 2 on node1 sum 3"], out


def test_two_clusters_do_not_see_each_other(cluster2, make_cluster):
    """A second cluster with the same names and addresses, running at the same time:
    neither its frames nor its commands reach the first."""
    a, b = cluster2, make_cluster(2)
    check(b, 1, "echo cluster-b > /tmp/mark")
    check(a, 1, "rm -f /tmp/mark")
    rc, out = a.run(0, "peach2-rsh node1 cat /tmp/mark")
    assert rc != 0 and "cluster-b" not in out
    assert check(b, 0, "peach2-rsh node1 cat /tmp/mark").strip() == "cluster-b"
    rx = "cat /sys/class/net/eth0/statistics/rx_packets"
    before_a, before_b = int(check(a, 1, rx)), int(check(b, 1, rx))
    check(a, 0, "ping -b -c 40 -i 0.05 -W 1 10.32.0.255 >/dev/null 2>&1; true", timeout=120)
    got_a = int(check(a, 1, rx)) - before_a
    got_b = int(check(b, 1, rx)) - before_b
    assert got_a >= 40, "cluster A's node1 got %d of 40 broadcasts" % got_a
    assert got_b < 10, "cluster B's node1 got %d packets while A broadcast" % got_b


def _copy_and_check(c, tmp_path, size, dest, nodes):
    src = tmp_path / ("f%d" % size)
    data = os.urandom(size)
    src.write_bytes(data)
    t0 = time.monotonic()
    assert c.copy_in(str(src), dest, nodes=nodes) == dest
    took = time.monotonic() - t0
    for i in nodes:
        got = check(c, i, "sha256sum %s" % dest).split()[0]
        assert got == hashlib.sha256(data).hexdigest(), "node%d: %s is not what was sent" % (i, dest)
    return took


def _copy_channel_checks(c, tmp_path, nodes):
    # Megabytes in seconds: the command channel's UART moved ~15 KB/s (16 MiB: ~18 min).
    took = _copy_and_check(c, tmp_path, 16 << 20, "/tmp/copies/big", nodes)
    print("\n16 MiB into %d guest(s) in %.1f s" % (len(nodes), took))
    assert took < 60, "16 MiB took %.1f s over the copy channel" % took
    # A copy that fails half-way (a full file system: 1 MiB of tmpfs for 4 MiB) is an
    # error naming the node, leaves nothing at its destination, and none of its bytes
    # reach the next copy.
    for i in nodes:
        check(c, i, "mkdir -p /tmp/small && mount -t tmpfs -o size=1m tmpfs /tmp/small")
    try:
        src = tmp_path / "too-big"
        src.write_bytes(os.urandom(4 << 20))
        with pytest.raises(cluster_mod.ClusterError, match=r"node\d: copying .*too-big to "
                           r"/tmp/small/too-big failed"):
            c.copy_in(str(src), "/tmp/small/too-big", nodes=nodes)
        for i in nodes:
            assert check(c, i, "ls -A /tmp/small").strip() == ""
    finally:
        for i in nodes:
            c.run(i, "umount /tmp/small")
    _copy_and_check(c, tmp_path, 3 << 20, "/tmp/copies/after", nodes)
    _copy_and_check(c, tmp_path, 0, "/tmp/copies/empty", nodes)


def test_copy_channel_debian(cluster2, tmp_path):
    """Cluster.copy_in (--copy) goes over each node's virtio-serial port."""
    _copy_channel_checks(cluster2, tmp_path, [0, 1])


def test_copy_channel_busybox(make_cluster, tmp_path):
    """The busybox guest loads virtio_console when the first copy asks for the port."""
    c = make_cluster(1, guest="busybox")
    assert "virtio_console" not in check(c, 0, "cat /proc/modules")
    _copy_channel_checks(c, tmp_path, [0])
