"""Helpers for the PEACH2 pytest suite (import from tests: `from peach2_testlib import ...`)."""

import os
import re
import sys
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
sys.path.insert(0, os.path.join(REPO, "scripts"))

import cluster as cluster_mod  # noqa: E402,F401  (scripts/cluster.py; re-exported)

HW_H = os.path.join(REPO, "include", "peach2", "peach2_hw.h")
SYSFS = "/sys/class/peach2/peach2-0"
DEV = "/dev/peach2-0"


def hw_constant(name):
    """The integer value of a #define in include/peach2/peach2_hw.h (the one copy of the
    hardware constants: tests read it instead of repeating numbers)."""
    with open(HW_H, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^#define\s+%s\s+\(?\s*(0x[0-9a-fA-F]+|\d+)[uUlL]*\s*\)?" % re.escape(name),
                  text, re.M)
    if not m:
        raise KeyError("%s not found in %s" % (name, HW_H))
    return int(m.group(1), 0)


def check(c, node, cmd, timeout=60):
    """Run cmd on a node, assert rc == 0, return the output."""
    rc, out = c.run(node, cmd, timeout=timeout)
    assert rc == 0, "node%d: %r exited %d:\n%s" % (node, cmd, rc, out)
    return out


def sysfs_read(c, node, attr, dev=SYSFS):
    """Contents of /sys/class/peach2/peach2-0/<attr> on a node, stripped."""
    return check(c, node, "cat %s/%s" % (dev, attr)).strip()


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
