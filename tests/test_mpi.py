"""MPI over the PEACH2 cards (issue 12): Debian's unmodified Open MPI (pml ucx) and MPICH
(ch4:ucx) run the project's MPI programs (userlib/mpi/) across VMs, UCX speaking TCA Verbs
(rc_verbs, ud_verbs) through the project's libibverbs.so.1.

Where the bytes go is checked, not assumed: the cards' link counters (sysfs `counters`)
grow by at least the bytes the ranks sent, the management network (eth0) carries only
launch and bootstrap traffic, and UCX is configured without tcp (/etc/ucx/ucx.conf), so a
job the cards cannot carry fails instead of passing over TCP.

The guests' MPI set-up under test (scripts/guest/ucx.conf, scripts/build-guest-root.py,
scripts/guest/environment): `mpirun -np N prog` and `mpiexec.mpich -n N prog` place ranks
on node0, node1, ... in turn with no host list.
"""

import hashlib
import re
import shutil
import subprocess
import time

import pytest

from peach2_testlib import check, failure_report, wait_until
# scripts/, on the path through peach2_testlib
from benchlib import MGMT_SLACK, card_bytes, mgmt_bytes, mpi_launch, tcp_pair

pytestmark = pytest.mark.vm

MPIS = ("openmpi", "mpich")


def run_counted(c, mpi, n, prog, timeout=600):
    """Run an MPI job from node 0; return (output, card tx deltas, eth0 tx deltas) per node."""
    nodes = range(c.n)
    cards0 = [card_bytes(c, i)[0] for i in nodes]
    mgmt0 = [mgmt_bytes(c, i) for i in nodes]
    t0 = time.monotonic()
    rc, out = c.run(0, mpi_launch(mpi, n, prog) + " 2>&1", timeout=timeout)
    took = time.monotonic() - t0
    # A job that fails now and then must leave enough to explain it.
    assert rc == 0, "%s exited %d after %.1f s:\n%s\n%s" % (
        mpi_launch(mpi, n, prog), rc, took, out, failure_report(c))
    cards = [card_bytes(c, i)[0] - cards0[i] for i in nodes]
    mgmt = [mgmt_bytes(c, i) - mgmt0[i] for i in nodes]
    print("\n%s, %.1f s: card tx bytes per node %s, eth0 tx bytes %s\n%s"
          % (mpi_launch(mpi, n, prog), took, cards, mgmt, out))
    return out, cards, mgmt


def ok_line(out, prog):
    m = re.search(r"^%s: OK.*$" % prog, out, re.M)
    assert m, "no '%s: OK' line:\n%s" % (prog, out)
    return m.group(0)


def test_ucx_is_pinned_to_the_cards(cluster2):
    """UCX's configuration in the guest: TCA Verbs between nodes, shared memory within,
    no tcp, large messages from 32 KiB by the sender's RDMA Write; and UCX finds both
    Verbs transports on the card."""
    c = cluster2
    cfg = check(c, 0, "ucx_info -c")
    tls = re.search(r"^UCX_TLS=(.*)$", cfg, re.M)
    assert tls and tls.group(1) == "rc_verbs,ud_verbs,sm,self", cfg
    for line in ("UCX_RNDV_THRESH=32K", "UCX_RNDV_SCHEME=put_zcopy"):
        assert re.search("^%s$" % line, cfg, re.M), cfg
    dev = check(c, 1, "ucx_info -d")
    for tl in ("rc_verbs", "ud_verbs"):
        assert re.search(r"Transport: %s\s*\n#\s*Device: peach2_0:1" % tl, dev), dev


def test_failure_report_has_every_node(cluster2):
    """What a failed job's assertion carries (run_counted): each node's card and read-proxy
    counters, Verbs statistics, what each user holds, kernel log, launcher log, TCP
    give-up counters and QEMU stderr; last, each node's peach2 kernel messages and QEMU
    warnings."""
    rep = failure_report(cluster2)
    for i in range(cluster2.n):
        part = rep.split("===== node%d (rc 0)" % i, 1)[1].split("=====", 1)[0]
        for what in ("[counters]", "[rproxy]", "served_read", "[verbs]", "[users]", "limits",
                     "[dmesg]", "[peach2-rsh.log]", "TcpExtTCPAbortOnTimeout",
                     "----- node%d QEMU stderr" % i):
            assert what in part, (i, what, rep)
    # The summary comes last: a log cut in the middle keeps it.
    summary = rep.rsplit("===== summary\n", 1)[1]
    for i in range(cluster2.n):
        for what in ("node%d: peach2 in dmesg" % i, "node%d: QEMU warnings" % i):
            assert what in summary, (what, summary)


@pytest.mark.parametrize("mpi", MPIS)
def test_pingpong_two_nodes(cluster2, mpi):
    """1 B .. 4 MiB both ways, every byte checked; the cards carried at least what the
    ranks sent, the management network next to nothing."""
    c = cluster2
    out, cards, mgmt = run_counted(c, mpi, 2, "mpi_pingpong.% -i 20 -B 4M")
    line = ok_line(out, "mpi_pingpong")
    assert "rank 0 on node0 <-> rank 1 on node1" in out, out
    sent = int(re.search(r"rank 0 sent (\d+) bytes", line).group(1))
    peer = int(re.search(r"every rank sent at least (\d+)", line).group(1))
    assert sent > 8 << 20 and peer >= sent, line
    assert cards[0] >= sent and cards[1] >= peer, (cards, sent)
    assert max(mgmt) < MGMT_SLACK, "eth0 carried %s bytes: MPI over TCP?" % mgmt
    # The timing table: a row per power of two, mean and median half round trips
    # (a median above the slowest possible mean would be a wrong order statistic).
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", out, re.M)
    assert [int(r[0]) for r in rows] == [1 << k for k in range(23)], out
    for size, iters, mean, med, _ in rows:
        assert 0 < float(med) <= float(mean) * int(iters), (size, mean, med)


@pytest.mark.parametrize("mpi", MPIS)
def test_collectives_halo_onesided_two_nodes(cluster2, mpi):
    c = cluster2
    for prog in ("mpi_collectives", "mpi_halo", "mpi_onesided"):
        out, cards, mgmt = run_counted(c, mpi, 2, prog + ".%")
        line = ok_line(out, prog)
        assert min(cards) > 64 << 10, (prog, cards)
        assert max(mgmt) < MGMT_SLACK, (prog, mgmt)
        if prog == "mpi_collectives":
            assert "2 ranks on 2 hosts" in line, line


def test_mpi4py(cluster2):
    """Debian's mpi4py (built for Open MPI) across the nodes, over the cards."""
    c = cluster2
    out, cards, mgmt = run_counted(c, "openmpi", 2, "python3 /usr/bin/mpi4py_ring.py")
    line = ok_line(out, "mpi4py_ring")
    assert "node0,node1" in line, line
    assert min(cards) >= 1 << 20, cards
    assert max(mgmt) < MGMT_SLACK, mgmt


@pytest.fixture(scope="module")
def ring4(make_cluster):
    return make_cluster(None, topology="ring:4")


@pytest.mark.parametrize("mpi", MPIS)
def test_ring4_two_hops(ring4, mpi):
    """4 ranks, one per node of ring:4: the ping-pong pairs (0, 2) and (1, 3) are two hops
    apart, so every message crosses a node that only forwards it; collectives and the
    halo exchange over the whole ring."""
    c = ring4
    out, cards, mgmt = run_counted(c, mpi, 4, "mpi_pingpong.% -n -M 1M")
    line = ok_line(out, "mpi_pingpong")
    assert "rank 0 on node0 <-> rank 2 on node2" in out, out
    sent = int(re.search(r"every rank sent at least (\d+)", line).group(1))
    # every node sent its own ranks' bytes and forwarded its neighbour's
    assert min(cards) >= 2 * sent, (cards, sent)
    assert max(mgmt) < MGMT_SLACK, mgmt
    for prog in ("mpi_collectives", "mpi_halo"):
        out, cards, mgmt = run_counted(c, mpi, 4, prog + ".%")
        line = ok_line(out, prog)
        assert max(mgmt) < MGMT_SLACK, (prog, mgmt)
        assert min(cards) > 64 << 10, (prog, cards)
        if prog == "mpi_collectives":
            assert "4 ranks on 4 hosts" in line, line


def test_ucx_perftest(cluster2):
    """Debian's ucx_perftest between the nodes: tag matching latency and bandwidth, and
    one-sided put and get (UCP), over the card."""
    c = cluster2
    for test, size, iters in (("tag_lat", "8", 200), ("tag_bw", "1048576", 20),
                              ("ucp_put_bw", "65536", 50), ("ucp_get", "65536", 50)):
        c.run(1, "killall ucx_perftest; true")  # a server left from the step before
        check(c, 1, "(ucx_perftest >/tmp/perf-server.log 2>&1 &)")
        # The client connects once, without retrying: wait until the server listens
        # (on its default port).
        wait_until(lambda: c.run(1, "ss -ltnH 'sport = :13337'")[1].strip(), timeout=60,
                   what="ucx_perftest's server on node1 to listen")
        tx0 = card_bytes(c, 0)[0] + card_bytes(c, 1)[0]
        out = check(c, 0, "ucx_perftest node1 -t %s -s %s -n %d 2>&1" % (test, size, iters),
                    timeout=300)
        moved = card_bytes(c, 0)[0] + card_bytes(c, 1)[0] - tx0
        print("\nucx_perftest -t %s -s %s: card bytes %d\n%s" % (test, size, moved, out))
        assert re.search(r"Final:\s+%d\s" % iters, out), out
        assert moved >= int(size) * iters, (test, moved)


@pytest.mark.parametrize("mpi", MPIS)
def test_killed_rank_fails_the_job(cluster2, mpi):
    """kill -9 of the rank on node1 in the middle of a long run: mpirun on node0 exits
    non-zero with an error within a bound, and the next job on the cluster runs."""
    c = cluster2
    prog = "mpi_pingpong.%s" % mpi
    check(c, 0, "rm -f /tmp/job.log; (%s > /tmp/job.log 2>&1; echo rc=$? >> /tmp/job.log) &"
          % mpi_launch(mpi, 2, "mpi_pingpong.% -m 64k -M 64k -i 1000000 -B 1G"))

    def timing():
        log = c.run(0, "cat /tmp/job.log")[1]
        assert "rc=" not in log, "the job ended before it was killed:\n" + log
        return "lat_us" in log

    wait_until(timing, timeout=120, what="the job's timing phase")
    pid = check(c, 1, "pidof %s" % prog).strip()
    check(c, 1, "kill -9 %s" % pid)
    t0 = time.monotonic()
    bound = 60
    log = wait_until(lambda: (lambda t: t if "rc=" in t else None)(c.run(0, "cat /tmp/job.log")[1]),
                     timeout=bound, interval=1, what="mpirun to exit after a rank was killed")
    took = time.monotonic() - t0
    print("\n%s: mpirun exited %.1f s after the kill:\n%s" % (mpi, took, log[-1500:]))
    rc = int(re.search(r"rc=(\d+)", log).group(1))
    assert rc != 0, log
    assert re.search(r"(?i)signal|killed|terminated|exited|abort", log), log
    # nothing of the job is left, and the next job runs
    wait_until(lambda: all(c.run(i, "pidof %s" % prog)[0] != 0 for i in range(2)),
               timeout=30, what="no rank left")
    out = check(c, 0, mpi_launch(mpi, 2, "mpi_pingpong.% -n -M 4k") + " 2>&1", timeout=300)
    ok_line(out, "mpi_pingpong")


# A crash on the way out, in any process of the job: UCX's handler prints "Caught signal
# 11 (Segmentation fault ...)", Hydra "BAD TERMINATION ... EXIT CODE: 139", the shell
# "Segmentation fault".
CRASH_RE = re.compile(r"(?i)caught signal|segmentation fault|signal 11|exit code: 139")


@pytest.mark.parametrize("mpi", MPIS)
def test_ranks_exit_without_finalize(cluster2, mpi):
    """exit() after MPI_Init without MPI_Finalize (issue 12; it crashed in UCX's async
    thread, which went on sending over TCA Verbs after our library's static destructors
    had unmapped the card): mpi_exit.% exits 7 from every rank right after MPI_Init (-e,
    UD wire-up in flight) and after traffic; the job ends with the ranks' code and no
    process crashes. With Open MPI also rank 0 alone (-1): mpirun ends the job, the
    others blocked on a receive from it. (Hydra does not end a job on a non-zero exit,
    so under MPICH such survivors wait for ever, as they would on InfiniBand: a QP with
    nothing outstanding to a dead peer does not fail.)"""
    c = cluster2
    prog = "mpi_exit.%s" % mpi
    for mode in ("-e", "") + (("-1",) if mpi == "openmpi" else ()):
        t0 = time.monotonic()
        rc, out = c.run(0, mpi_launch(mpi, 2, "mpi_exit.% -c 7 " + mode) + " 2>&1", timeout=300)
        print("\n%s %s: rc %d in %.1f s\n%s" % (prog, mode, rc, time.monotonic() - t0, out))
        assert not CRASH_RE.search(out), out
        assert rc == 7, "%s %s: rc %d, want the ranks' 7:\n%s" % (prog, mode, rc, out)
        # Every rank that exits says so (rank 0 alone with -1). Count the line's end, not
        # whole lines: Hydra has been seen to interleave the two ranks' lines in pieces
        # ("mpi_exit: rank 0mpi_exit: rank  on node0 1exits 7 ..."); rc says it was 7.
        said = "right after MPI_Init" if mode == "-e" else "with its connections open"
        assert out.count(said) == (1 if mode == "-1" else 2), out
        if mode == "-1":
            assert "rank 0 on node0 exits 7" in out and "rank 1 on" not in out, out
        wait_until(lambda: all(c.run(i, "pidof %s" % prog)[0] != 0 for i in range(2)),
                   timeout=30, what="no rank left")
    ok_line(check(c, 0, mpi_launch(mpi, 2, "mpi_pingpong.% -n -M 4k") + " 2>&1", timeout=300),
            "mpi_pingpong")


def test_verbs_program_exits_with_objects_alive(cluster2):
    """A plain Verbs program (no MPI) that calls exit(0) with its QP, CQ and MR alive
    while a thread of its own still polls the CQ and posts receives, through every exit
    handler: it exits 0, and its peer's Sends fail as with a killed process
    (`tca_verbs_check exit`)."""
    c = cluster2
    rc_s, srv, rc_c, cli = tcp_pair(c, 1, 0, "tca_verbs_check -n 300 exit", 18990, timeout=300)
    print("\nserver (node1) rc %d:\n%s\nclient (node0) rc %d:\n%s" % (rc_s, srv, rc_c, cli))
    assert not CRASH_RE.search(srv), srv
    assert rc_s == 0, srv
    assert "calls exit(0) with its QP, CQ and MR alive" in srv, srv
    polls = re.search(r"polling thread polled (\d+) times during the last exit handler", srv)
    assert polls and int(polls.group(1)) > 0, srv
    assert rc_c == 0, cli
    assert re.search(r"exit: PASS \(client\).*transport retry counter exceeded", cli), cli


# A user's own MPI program, built on the host (Debian 12 on both sides, so host binaries
# run in the guests) and copied in with Cluster.copy_in (scripts/cluster.py --copy).
USER_RING_C = r"""
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	char name[MPI_MAX_PROCESSOR_NAME] = "", heard[MPI_MAX_PROCESSOR_NAME] = "";
	int rank, size, len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &len);
	MPI_Sendrecv(name, sizeof(name), MPI_CHAR, (rank + 1) % size, 0, heard, sizeof(heard),
		     MPI_CHAR, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	printf("user_ring: rank %d on %s heard from %s\n", rank, name, heard);
	MPI_Finalize();
	return 0;
}
"""


@pytest.mark.parametrize("mpi", MPIS)
def test_users_own_program_copied_in(cluster2, mpi, tmp_path):
    """A program built on the host with Debian's mpicc (scripts/install-deps.sh) is copied
    into both guests (Cluster.copy_in, the API of --copy), byte for byte with its mode,
    readable and executable by the guests' `user`, and runs across the nodes."""
    c = cluster2
    cc = "mpicc.%s" % mpi
    assert shutil.which(cc), "%s not on the host: run scripts/install-deps.sh" % cc
    src = tmp_path / "user_ring.c"
    src.write_text(USER_RING_C)
    exe = tmp_path / "user_ring"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True)
    data = exe.read_bytes()
    t0 = time.monotonic()
    assert c.copy_in(str(exe), "/tmp/users/") == "/tmp/users/user_ring"
    print("\ncopied %d bytes into 2 guests in %.1f s" % (len(data), time.monotonic() - t0))
    for i in range(2):
        got = check(c, i, "sha256sum /tmp/users/user_ring; stat -c %a /tmp/users/user_ring")
        assert got.split() == [hashlib.sha256(data).hexdigest(), "/tmp/users/user_ring",
                               "%o" % (exe.stat().st_mode & 0o777 | 0o444)], got
        # the guests' unprivileged user may read and run it (MPI jobs as `user` are
        # another matter: UCX's pools exceed its 8 MiB RLIMIT_MEMLOCK, docs/notes.md)
        check(c, i, "su user -c 'test -r /tmp/users/user_ring && test -x /tmp/users/user_ring'")
    cmd = mpi_launch(mpi, 2, "/tmp/users/user_ring")
    out = check(c, 0, cmd + " 2>&1", timeout=300)
    print("%s:\n%s" % (cmd, out))
    assert "user_ring: rank 0 on node0 heard from node1" in out, out
    assert "user_ring: rank 1 on node1 heard from node0" in out, out
