"""Helpers for the PEACH2 pytest suite (import from tests: `from peach2_testlib import ...`)."""

import functools
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
sys.path.insert(0, os.path.join(REPO, "scripts"))

import cluster as cluster_mod  # noqa: E402,F401  (scripts/cluster.py; re-exported)
from benchlib import node_report  # noqa: E402

HEADERS = os.path.join(REPO, "include", "peach2")
SYSFS = "/sys/class/peach2/peach2-0"
DEV = "/dev/peach2-0"


@functools.lru_cache(maxsize=None)
def header_constants():
    """{name: value} of every integer constant in include/peach2/*.h (the one copy of the
    facts device, driver and library share): object-like #defines and enum members,
    however they are written (expressions, X-macro tables). The C compiler evaluates
    them, once per session, so a test never repeats a number the headers define."""
    headers = sorted(glob.glob(os.path.join(HEADERS, "*.h")))
    includes = "".join('#include "%s"\n' % h for h in headers)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "consts.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(includes)

        def cc(*args):
            return subprocess.run(["gcc", "-I", os.path.join(REPO, "include")] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, check=True).stdout

        names = set()
        for line in cc("-E", "-dM", src).splitlines():  # object-like macros with a value
            m = re.match(r"#define (PEACH2_\w+) (.+)$", line)
            if m and '"' not in m.group(2) and not m.group(1).endswith("_H"):
                names.add(m.group(1))
        body = cc("-E", "-P", src)                       # enums, X-macros expanded
        for enum in re.findall(r"\benum\s+\w*\s*\{([^}]*)\}", body):
            names.update(re.findall(r"\b(PEACH2_\w+)\s*(?:=|,|$)", enum))
        names = sorted(names)
        with open(src, "a", encoding="utf-8") as f:
            f.write("#include <stdio.h>\nint main(void)\n{\n")
            for n in names:
                f.write('\tprintf("%%s %%llu\\n", "%s", (unsigned long long)(%s));\n' % (n, n))
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(tmp, "consts")
        cc("-o", exe, src)
        out = subprocess.run([exe], stdout=subprocess.PIPE, text=True, check=True).stdout
    return {n: int(v) for n, v in (l.split() for l in out.splitlines())}


def hw(name):
    """The value of constant `name` (e.g. "PEACH2_DMA_CHANNELS") in include/peach2/*.h."""
    consts = header_constants()
    if name not in consts:
        raise KeyError("%s is not an integer constant of include/peach2/*.h" % name)
    return consts[name]



def err_code(name):
    """The card error code `name` ("NO_SUCH_NODE", as sysfs and tcaCardErrorName print
    it): the value of PEACH2_ERR_<name>."""
    return hw("PEACH2_ERR_" + name)


def check(c, node, cmd, timeout=60):
    """Run cmd on a node, assert rc == 0, return the output."""
    rc, out = c.run(node, cmd, timeout=timeout)
    assert rc == 0, "node%d: %r exited %d:\n%s" % (node, cmd, rc, out)
    return out


def failure_report(c, nodes=None):
    """What a failed multi-node run leaves to look at, for its assertion message: per
    node the card's counters, errors, read proxy and Verbs statistics, what each user
    holds (`users`), then benchlib.node_report (kernel log, launcher log, TCP give-ups),
    and the tail of its QEMU's stderr (link and direct-write messages). Reads only; a
    node that does not answer says so."""
    parts, summary = [], []
    for i in range(c.n) if nodes is None else nodes:
        rc, out, said = 1, "", ""
        if c.node_alive(i):
            rc, out = c.run(i, "cd %s && for f in counters errors_by_code rproxy verbs users "
                            "link_e link_w; do echo \"[$f]\"; cat $f; done" % SYSFS, timeout=30)
            rc_node, out_node = node_report(c, i)
            rc, out = rc or rc_node, out + out_node
            said = c.run(i, "dmesg | grep -i peach2 | tail -8", timeout=30)[1]
        parts.append("===== node%d (rc %d)\n%s" % (i, rc, out))
        stderr = c.qemu_stderr(i, 100000)
        parts.append("----- node%d QEMU stderr\n%s" % (i, stderr[-1500:]))
        qemu_said = [l for l in stderr.splitlines()
                     if re.search(r"warning|error|drop|down|slow", l, re.I)][-8:]
        summary.append("node%d: peach2 in dmesg (last 8):\n%s\nnode%d: QEMU warnings (last 8):\n%s"
                       % (i, said.rstrip() or "  (none)", i, "\n".join(qemu_said) or "  (none)"))
    # Last, so that a log cut in the middle (CI) still shows them.
    parts.append("===== summary\n" + "\n".join(summary))
    return "\n".join(parts)


def sysfs_read(c, node, attr, dev=SYSFS):
    """Contents of /sys/class/peach2/peach2-0/<attr> on a node, stripped."""
    return check(c, node, "cat %s/%s" % (dev, attr)).strip()


def irq_count(c, node, name):
    """Interrupts of the vector named `name` (e.g. peach2-0, peach2-0-rp) on `node`, all
    CPUs, from /proc/interrupts."""
    for line in check(c, node, "cat /proc/interrupts").splitlines():
        fields = line.split()
        if fields and fields[-1] == name:
            return sum(int(f) for f in fields[1:] if f.isdigit())
    raise AssertionError("no %s line in node%d's /proc/interrupts" % (name, node))


def wait_until(fn, timeout=10.0, interval=0.2, what="condition"):
    """Call fn() until it returns a truthy value; return it. On timeout raise
    AssertionError with the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timeout (%.1f s) waiting for %s; last value: %r"
                                 % (timeout, what, last))
        time.sleep(interval)


def wait_sysfs(c, node, attr, expected, timeout=10.0):
    """Poll a sysfs attribute until it equals `expected` (string) or a predicate holds."""
    pred = expected if callable(expected) else (lambda v: v == expected)
    seen = []

    def probe():
        v = sysfs_read(c, node, attr)
        seen[:] = [v]
        return pred(v)

    try:
        wait_until(probe, timeout, what="node%d %s" % (node, attr))
    except AssertionError:
        raise AssertionError("node%d %s: expected %r within %.0f s, last read %r"
                             % (node, attr, expected, timeout, seen[0] if seen else None))
    return seen[0]


def guest_elf_files(c, node, directory):
    """Executable ELF files directly in a guest directory (sorted paths)."""
    out = check(c, node,
                'for f in %s/*; do [ -f "$f" ] && [ -x "$f" ] && '
                '[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] && echo "$f"; done; true' % directory)
    return sorted(l for l in out.splitlines() if l.strip())


def tap_failures(output):
    """`not ok` lines of TAP output (kselftest)."""
    return [l for l in output.splitlines() if re.match(r"\s*not ok\b", l)]


def rp_pair(c, server, client, serve_args, client_cmd, timeout=600):
    """`tca_check rp serve` on `server` and a client subcommand on `client`, run
    concurrently: (rc, output) of the server, then of the client."""
    cmds = {server: "tca_check rp serve --peer %d %s" % (client, serve_args),
            client: "tca_check rp %s --peer %d" % (client_cmd, server)}
    (rc_s, out_s), (rc_c, out_c) = c.run_all(lambda i: cmds[i], timeout=timeout,
                                             nodes=[server, client])
    return rc_s, out_s, rc_c, out_c
