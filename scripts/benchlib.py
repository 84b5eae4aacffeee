"""What the benchmark scripts (demo.py --bench, bench-dma.py, bench-get.py, bench-verbs.py,
bench-mpi-scale.py) and the Verbs and MPI tests share: where their CSV goes, copying it out
of a guest, checking the guests' kernels, running a server/client pair that meets over TCP,
starting an MPI job and counting where its bytes went, and what a failed step leaves on
its nodes."""
import os
import re
import time

from cluster import build_dir


# Guest RAM (MiB) of the Verbs and MPI benchmarks' two nodes. The clusters' default (256)
# leaves a guest ~206 MiB, and every new process's buffers come out more scattered than
# the last one's: ib_write_bw 1 MiB 18 -> 12 GB/s over six runs in one cluster (60-125
# physically contiguous ranges per 2 MiB registration), a cost per DMA descriptor that
# real hardware does not have and a TCG guest pays many times over. With 448 the same
# six runs kept 16.5-18.8 GB/s (docs/notes.md, thirty-fifth session). Below 512: the
# guest kernel turns transparent huge pages on from 512 MiB, and they made Writes slower.
BENCH_MEM_MIB = 448


def add_mem_argument(ap):
    """--mem for a benchmark's argparse parser: its guests' RAM, BENCH_MEM_MIB by default."""
    ap.add_argument("--mem", type=int, default=BENCH_MEM_MIB,
                    help="guest RAM in MiB (default %d: benchlib.BENCH_MEM_MIB says why)"
                    % BENCH_MEM_MIB)


# MPI payload on the management network of this size or more would mean a TCP lane
# (launch, wire-up addresses and output are less).
MGMT_SLACK = 512 << 10


def mpi_launch(mpi, n, prog):
    """The command line that starts n ranks of prog (a userlib/mpi program; "%" in it
    stands for the MPI's name, e.g. "mpi_halo.%") with one MPI ("openmpi" or "mpich")."""
    if mpi == "openmpi":
        return "mpirun -np %d %s" % (n, prog.replace("%", "openmpi"))
    return "mpiexec.mpich -n %d %s" % (n, prog.replace("%", "mpich"))


def _guest_file(c, node, path):
    rc, out = c.run(node, "cat " + path, timeout=60)
    if rc != 0:
        raise RuntimeError("node%d: cat %s exited %d:\n%s" % (node, path, rc, out))
    return out


def card_bytes(c, node):
    """(tx, rx) payload bytes of all ports of a node's card (sysfs counters)."""
    out = _guest_file(c, node, "/sys/class/peach2/peach2-0/counters")
    return (sum(int(v) for v in re.findall(r"tx_bytes=(\d+)", out)),
            sum(int(v) for v in re.findall(r"rx_bytes=(\d+)", out)))


def mgmt_bytes(c, node):
    """Bytes node sent on the management network (eth0)."""
    return int(_guest_file(c, node, "/sys/class/net/eth0/statistics/tx_bytes"))


def bench_csv(name):
    """Host path of a benchmark CSV: <build>/bench/<name>."""
    return os.path.join(build_dir(), "bench", name)


def save_guest_csv(c, node, guest_path, host_path):
    """Copy a CSV a guest program wrote to the host. Its text, or None if unreadable."""
    rc, text = c.run(node, "cat %s" % guest_path)
    if rc != 0:
        return None
    os.makedirs(os.path.dirname(host_path), exist_ok=True)
    with open(host_path, "w", encoding="utf-8") as f:
        f.write(text)
    print("\nCSV written to %s" % host_path)
    return text


def kernels_clean(c, nodes):
    """Print every guest kernel problem (BUG, Oops, WARNING...) of the nodes; True if none."""
    ok = True
    for i in nodes:
        problems = c.kernel_problems(i)
        if problems:
            ok = False
            print("node%d kernel problems:\n  %s" % (i, "\n  ".join(problems[:10])))
    return ok


def node_report(c, node):
    """(rc, text): what a failed step leaves on one node: the kernel log's tail, the
    launcher agent's log (peach2-rsh, which MPI launchers start remote processes with)
    and the TCP counters that say whether a connection was given up on the management
    network (keepalive or retransmission timeouts: TcpExtTCPAbortOnTimeout)."""
    return c.run(node, "echo '[dmesg]'; dmesg | tail -15; echo '[peach2-rsh.log]'; "
                 "tail -8 /var/log/peach2-rsh.log; echo '[nstat]'; nstat -az "
                 "TcpExtTCPAbortOnTimeout TcpExtTCPKeepAlive TcpRetransSegs "
                 "TcpExtTCPTimeouts", timeout=60)


def launch_report(c, nodes):
    """node_report of each node that is still up, for a failed step's message."""
    parts = []
    for i in nodes:
        rc, out = node_report(c, i) if c.node_alive(i) else (1, "")
        parts.append("===== node%d (rc %d)\n%s" % (i, rc, out))
    return "\n".join(parts)


def tcp_pair(c, server, client, cmd, port, timeout=600):
    """A program whose server and client meet over TCP (ibv_rc_pingpong, perftest,
    tca_verbs_check): `cmd -p PORT` on node `server` in the background, then, once it
    listens, `cmd -p PORT node<server>` on node `client`. Returns (server rc, server
    output, client rc, client output); a server that never ends is killed by timeout(1)
    and reports rc 124."""
    log = "/tmp/tcp-pair-%d.log" % port
    c.run(server, "(timeout %d %s -p %d > %s 2>&1; echo @@rc=$? >> %s) &"
          % (timeout, cmd, port, log, log))
    deadline = time.monotonic() + 60
    while not (c.run(server, "ss -ltnH 'sport = :%d'" % port)[1].strip()
               or "@@rc=" in c.run(server, "cat %s" % log)[1]):
        if time.monotonic() > deadline:
            break  # the client's connection attempts fail and say so
        time.sleep(0.2)
    rc_c, out_c = c.run(client, "%s -p %d node%d" % (cmd, port, server), timeout=timeout)
    deadline = time.monotonic() + timeout
    while "@@rc=" not in c.run(server, "cat %s" % log)[1] and time.monotonic() < deadline:
        time.sleep(0.2)
    out_s = c.run(server, "cat %s; rm -f %s" % (log, log))[1]
    m = re.search(r"^@@rc=(\d+)$", out_s, re.M)
    rc_s = int(m.group(1)) if m else 124
    return rc_s, out_s[:m.start()] if m else out_s, rc_c, out_c


# perftest's bandwidth goals time the steady state: duration mode, 3 s, the middle second
# measured. A run of -n messages is timed from its first, whose costs (a new process, new
# QPs, the first DMA runs) read 1 MiB Writes 30-50 % and 4 MiB Writes ~30 % low.
PERFTEST_STEADY = "-D 3 -f 1"

# perftest's clock check (get_cpu_mhz: rdtsc against gettimeofday) fails now and then in
# a TCG guest on a busy host; in duration mode (-D) it then prints the first of these and
# no result, a latency test the second and a row of inf (seen in bench-mpi after the
# guest kernel had found its TSC unstable, the host busy with the MPI jobs).
PERFTEST_CLOCK_FAILED = ("Can't produce a report", "Correlation coefficient r^2")


def perftest_pair(c, server, client, cmd, port, timeout=600, tries=3):
    """tcp_pair() for a perftest program, run again (on another port) while its clock check
    fails, at most `tries` times; returns the last run's tcp_pair() result."""
    for k in range(tries):
        res = tcp_pair(c, server, client, cmd, port + 10000 * k, timeout)
        failed = [m for m in PERFTEST_CLOCK_FAILED if m in res[1] + res[3]]
        if not failed:
            return res
        print("%s: perftest's clock check failed (%s); again" % (cmd, failed[0]), flush=True)
    return res
