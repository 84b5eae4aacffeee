"""What the benchmark scripts (demo.py --bench, bench-dma.py, bench-get.py, bench-verbs.py)
and the Verbs tests share: where their CSV goes, copying it out of a guest, checking the
guests' kernels, running a server/client pair that meets over TCP."""
import os
import re
import time

from cluster import build_dir


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
