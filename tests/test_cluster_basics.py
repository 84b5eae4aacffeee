"""Smoke tests of a 2-node cluster: PCI identity, driver binding, links, selftests."""

import re

import pytest

from peach2_testlib import (DEV, check, guest_elf_files, hw, sysfs_read,
                            tap_failures, wait_sysfs)

pytestmark = pytest.mark.vm

N = 2


def _ids():
    return (hw("PEACH2_PCI_VENDOR_ID"), hw("PEACH2_PCI_DEVICE_ID"),
            hw("PEACH2_PCI_CLASS"), hw("PEACH2_PCI_REVISION"))


def test_boot_time_recorded(cluster2):
    for i in range(N):
        assert cluster2.boot_times[i] > 0


@pytest.mark.parametrize("node", range(N))
def test_lspci_shows_one_peach2(cluster2, node):
    vendor, device, cls, rev = _ids()
    out = check(cluster2, node, "lspci -n")
    ident = "%04x:%04x" % (vendor, device)
    hits = [l for l in out.splitlines() if ident in l]
    assert len(hits) == 1, "expected exactly one %s in lspci -n:\n%s" % (ident, out)
    # e.g. "00:03.0 0280: 1234:7ca2 (rev 01)"
    m = re.match(r"^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ([0-9a-f]{4}): %s(?: \(rev ([0-9a-f]{2})\))?$"
                 % ident, hits[0].strip())
    assert m, "unexpected lspci line: %r" % hits[0]
    assert int(m.group(1), 16) == cls
    assert int(m.group(2) or "0", 16) == rev


@pytest.mark.parametrize("node", range(N))
def test_driver_bound(cluster2, node):
    assert sysfs_read(cluster2, node, "node_id") == str(node)
    assert sysfs_read(cluster2, node, "node_count") == str(N)
    check(cluster2, node, "test -c %s" % DEV)
    assert cluster2.nodes[node].ready_id == str(node)


@pytest.mark.parametrize("node", range(N))
def test_guest_clock_stays_on_the_tsc(cluster2, node):
    # The launcher's tsc=reliable: the clocksource watchdog cannot move the clock to HPET
    # (an MMIO read per clock_gettime under TCG) when a busy host delays its reads.
    assert "tsc=reliable" in check(cluster2, node, "cat /proc/cmdline").split()
    assert check(cluster2, node, "cat /sys/devices/system/clocksource/clocksource0/"
                 "current_clocksource").strip() == "tsc"
    assert "TSC unstable" not in check(cluster2, node, "dmesg")


def test_links_up(cluster2):
    # The cable of a 2-node cluster: node0.E <-> node1.W. Links come up asynchronously.
    wait_sysfs(cluster2, 0, "link_e", "up peer=1 port=W", timeout=10)
    wait_sysfs(cluster2, 1, "link_w", "up peer=0 port=E", timeout=10)


def test_uncabled_ports_down(cluster2):
    # node0.W and node1.E have no cable (no chardev) in a 2-node cluster.
    assert sysfs_read(cluster2, 0, "link_w") == "down"
    assert sysfs_read(cluster2, 1, "link_e") == "down"


def test_selftests(cluster2):
    """Every selftest binary in /selftests passes on every node (TAP: no `not ok`, rc 0).
    No binaries at all is a build failure, not a skip."""
    progs = guest_elf_files(cluster2, 0, "/selftests")
    assert progs, ("no selftest binaries in the guest's /selftests: build them "
                   "(make -C selftests) and rebuild the initramfs")
    failures = []
    for node in range(N):
        for p in progs:
            # The unbind/rebind tests are opt-in for people running the suite by
            # hand; here they run, and a skipped test is a failure, not a pass.
            rc, out = cluster2.run(node, "PEACH2_TEST_UNBIND=1 " + p, timeout=300)
            bad = tap_failures(out) + [l for l in out.splitlines()
                                       if re.match(r"^ok \d+ .*# SKIP", l)]
            if rc != 0 or bad:
                # full output on stdout (pytest shows it for the failed test)
                print("===== node%d %s (rc=%d) =====\n%s" % (node, p, rc, out))
                failures.append("node%d %s: rc=%d%s" % (
                    node, p, rc, "".join("\n    " + l for l in bad)))
    if failures:
        pytest.fail("selftest failures (full output in the captured stdout):\n"
                    + "\n".join(failures), pytrace=False)
