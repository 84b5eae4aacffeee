"""The in-guest fuzzer (issue 14): tca_fuzz makes random ioctl/mmap/munmap/fork/close/open
calls on /dev/peach2-0 as root and as an unprivileged user on both nodes at once, while
node 0's driver is unbound and bound again under that load. Afterwards: no oops/WARN/BUG,
nothing hung, and the driver's books (descriptor RAM, exports, names, pinned pages,
filter ranges, per-user memory, DMA channels) are back where they started.

PEACH2_FUZZ_SECONDS sets the run's length (default 20 s; `make fuzz` runs it longer),
PEACH2_FUZZ_SEED its seed (default 1; each process derives its own from it)."""

import os
import re

import pytest

from peach2_testlib import DEV, SYSFS, check, sysfs_read, wait_until

pytestmark = pytest.mark.vm

SECONDS = int(os.environ.get("PEACH2_FUZZ_SECONDS", "20"))
SEED = int(os.environ.get("PEACH2_FUZZ_SEED", "1"))
USER_UID = 1000  # the guest's user; the fuzzer drops to it itself
UNBINDS = 2      # on node 0, spread over the run


@pytest.fixture(scope="module")
def fc(make_cluster):
    return make_cluster(2, guest="busybox")


def books(c, node):
    """What the driver holds for processes, from sysfs: {name: value}."""
    out = {}
    m = re.search(r"used=(\d+)", sysfs_read(c, node, "dma_desc_ram"))
    out["desc_ram_used"] = int(m.group(1))
    rp = dict(l.split() for l in sysfs_read(c, node, "rproxy").splitlines())
    out["exports"] = int(rp["exports"])
    verbs = dict(l.split() for l in sysfs_read(c, node, "verbs").splitlines())
    for k in ("names", "pinned_bufs", "pinned_pages", "quarantined_bufs", "filter_ranges"):
        out[k] = int(verbs[k])
    out["users"] = sorted(l for l in sysfs_read(c, node, "users").splitlines()
                          if l.startswith("uid "))
    out["busy_channels"] = len(re.findall(r"busy|wedged", sysfs_read(c, node, "dma")))
    return out


def wait_device():
    """Shell: wait for /dev/peach2-0 to come back, then open it to everybody."""
    return ("for i in $(seq 100); do [ -c %s ] && break; sleep 0.1; done; chmod 666 %s"
            % (DEV, DEV))


def fuzz_script(node, seconds, seed):
    """Both fuzzers in the background; on node 0 the driver unbound and bound again
    UNBINDS times while they run. Prints each fuzzer's log and exit code."""
    root = "tca_fuzz --seconds %d --seed %d" % (seconds, seed + 2 * node)
    user = "tca_fuzz --seconds %d --seed %d --uid %d" % (seconds, seed + 2 * node + 1, USER_UID)
    s = [wait_device(),
         "%s > /tmp/fuzz-root.log 2>&1 & a=$!" % root,
         "%s > /tmp/fuzz-user.log 2>&1 & b=$!" % user]
    if node == 0:
        pci = "$(basename $(readlink %s/device))" % SYSFS
        s.append("pci=%s" % pci)
        gap = max(1, seconds // (UNBINDS + 1))
        for _ in range(UNBINDS):
            s += ["sleep %d" % gap,
                  "echo $pci > /sys/bus/pci/drivers/peach2/unbind",
                  "sleep 1",
                  "echo $pci > /sys/bus/pci/drivers/peach2/bind",
                  wait_device(),
                  "echo unbound and bound again"]
    s += ["wait $a; ra=$?", "wait $b; rb=$?",
          "cat /tmp/fuzz-root.log /tmp/fuzz-user.log",
          "echo fuzz-exit root=$ra user=$rb"]
    return "; ".join(s)


def test_fuzz_as_root_and_user_with_unbinds(fc):
    c = fc
    before = {n: books(c, n) for n in (0, 1)}
    outs = c.run_all(lambda n: fuzz_script(n, SECONDS, SEED), timeout=SECONDS + 240)
    for n, (rc, out) in enumerate(outs):
        print("--- node%d ---\n%s" % (n, out))
        assert rc == 0, "node%d: the fuzz script exited %d:\n%s" % (n, rc, out)
        assert "fuzz-exit root=0 user=0" in out, "node%d: a fuzzer failed:\n%s" % (n, out)
        assert out.count("tca_fuzz: PASS") == 2, out
        ops = [int(x) for x in re.findall(r"tca_fuzz: (\d+) ops", out)]
        assert len(ops) == 2 and min(ops) > 100, "node%d: too few ops %r" % (n, ops)
    assert outs[0][1].count("unbound and bound again") == UNBINDS

    # Every process is gone: what they held comes back (quarantined pages after
    # name_quarantine_ms), and nothing is left running on the card.
    for n in (0, 1):
        wait_until(lambda: books(c, n) == before[n], timeout=60,
                   what="node%d's books back to %r (now %r)" % (n, before[n], books(c, n)))
        dmesg = check(c, n, "dmesg")
        bad = c.kernel_problems(n, dmesg) + c.kernel_problems(n)
        assert not bad, "node%d kernel problems:\n%s" % (n, "\n".join(bad))
    # The cards still work: a local DMA chain on each node.
    for n in (0, 1):
        out = check(c, n, "tca_check dma chain --descs 64 --starts 2", timeout=300)
        assert "PASS" in out.strip().splitlines()[-1], out
