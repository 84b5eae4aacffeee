"""pytest fixtures for PEACH2 VM tests.

Fixtures
  cluster2          a 2-node cluster shared by the whole session (tests must leave it usable)
  make_cluster      factory: make_cluster(n, **Cluster kwargs) -> started Cluster, stopped
                    when the test module ends (use for other sizes or device properties)
  peach2_images     ensures QEMU, kernel and initramfs exist (builds the initramfs)

Kernel-log guard: after every test, the kernel log of every live cluster (console ttyS0
and `dmesg`, which also holds the warnings that loglevel=4 keeps off the console) is
checked for BUG:/Oops/WARNING:/Call Trace; new hits make that test error at teardown, and
the session fails.

Options: --peach2-no-build (do not run scripts/build-initramfs.sh), --peach2-keep (keep
run directories with console logs and, for the clusters still up at the end of their
scope, each node's dmesg). Select host-only tests with -m "not vm".
"""

import os
import subprocess

import pytest

from peach2_testlib import REPO, cluster_mod

_clusters = []          # every cluster started in this session
_seen = {}              # (id(cluster), node) -> (console chars, last dmesg line) already checked
_problems = []          # all kernel problems found (session summary)


def pytest_addoption(parser):
    g = parser.getgroup("peach2")
    g.addoption("--peach2-no-build", action="store_true",
                help="do not run scripts/build-initramfs.sh before VM tests")
    g.addoption("--peach2-keep", action="store_true",
                help="keep cluster run directories (console logs, dmesg) after the session")


def pytest_configure(config):
    config.addinivalue_line("markers", "vm: boots QEMU guests (slow; needs QEMU, kernel, initramfs)")


@pytest.fixture(scope="session")
def peach2_images(request):
    """Paths of QEMU, kernel and initramfs; fails (not skips) when one is missing."""
    if not request.config.getoption("--peach2-no-build") and not os.environ.get("PEACH2_INITRD"):
        r = subprocess.run([os.path.join(REPO, "scripts", "build-initramfs.sh")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            pytest.fail("scripts/build-initramfs.sh failed:\n" + r.stdout, pytrace=False)
    paths = {"qemu": cluster_mod.default_qemu(), "kernel": cluster_mod.default_kernel(),
             "initrd": cluster_mod.default_initrd()}
    hints = {"qemu": "scripts/build-qemu.sh", "kernel": "scripts/fetch-guest-kernel.sh",
             "initrd": "scripts/build-initramfs.sh"}
    for k, p in paths.items():
        if not os.path.exists(p):
            pytest.fail("%s missing: %s (run %s)" % (k, p, hints[k]), pytrace=False)
    return paths


def _kernel_problems(c):
    """New problem lines since the last check, as 'node<i>: <line>' strings."""
    found = []
    for i in range(c.n):
        key = (id(c), i)
        con_seen, dmesg_seen = _seen.get(key, (0, None))
        text = c.console_log(i)
        found += ["node%d console: %s" % (i, l) for l in c.kernel_problems(i, text[con_seen:])]
        node = c.nodes[i] if i < len(c.nodes) else None
        last = dmesg_seen
        if node is not None and node.alive() and not node.pending:
            try:
                rc, out = c.run(i, "dmesg", timeout=30)
            except cluster_mod.ClusterError as e:
                found.append("node%d: cannot read dmesg: %s" % (i, str(e).splitlines()[0]))
            else:
                lines = out.splitlines()
                # New lines are those after the last line seen before (lines carry
                # timestamps); if it is gone (restart, ring buffer wrapped) check all.
                start = 0
                if dmesg_seen in lines:
                    start = len(lines) - lines[::-1].index(dmesg_seen)
                new = "\n".join(lines[start:])
                found += ["node%d dmesg: %s" % (i, l) for l in c.kernel_problems(i, new)]
                last = lines[-1] if lines else None
        _seen[key] = (len(text), last)
    return found


def _save_dmesg(c):
    """--peach2-keep: each live node's whole kernel log beside its console log (which
    shows only errors: loglevel=4), for warnings of a run that passed."""
    for i in range(c.n):
        node = c.nodes[i] if i < len(c.nodes) else None
        if node is None or not node.alive() or node.pending or c.run_dir is None:
            continue
        try:
            rc, out = c.run(i, "dmesg", timeout=30)
        except cluster_mod.ClusterError:
            continue
        with open(os.path.join(c.run_dir, "node%d.dmesg" % i), "w") as f:
            f.write(out)


class _Factory:
    """Starts clusters for one fixture scope and stops them (kernel logs checked) when
    the scope ends: a cluster nobody uses any more would keep its idle guests on the
    two cores and add its nodes to the kernel-log guard after every test."""

    def __init__(self, request, images):
        self.keep = request.config.getoption("--peach2-keep")
        self.images = images
        self.mine = []

    def __call__(self, n, **kw):
        kw.setdefault("qemu", self.images["qemu"])
        kw.setdefault("kernel", self.images["kernel"])
        kw.setdefault("initrd", self.images["initrd"])
        kw.setdefault("keep", self.keep)
        c = cluster_mod.Cluster(n, **kw)
        try:
            c.start()
        except cluster_mod.ClusterError as e:
            pytest.fail("cluster of %d did not boot:\n%s" % (n, e), pytrace=False)
        self.mine.append(c)
        _clusters.append(c)
        return c

    def stop_all(self):
        errors = []
        for c in self.mine:
            errors += _kernel_problems(c)
            if self.keep:
                _save_dmesg(c)
            c.stop()
            _clusters.remove(c)
        self.mine = []
        _problems.extend(errors)
        if errors:
            pytest.fail("kernel problems in guest logs:\n" + "\n".join(errors), pytrace=False)


@pytest.fixture(scope="module")
def make_cluster(request, peach2_images):
    """make_cluster(n, **Cluster kwargs) -> a started Cluster, stopped when the test
    module ends."""
    f = _Factory(request, peach2_images)
    yield f
    f.stop_all()


@pytest.fixture(scope="session")
def cluster2(request, peach2_images):
    """Two nodes, cabled node0.E <-> node1.W, shared by the session."""
    f = _Factory(request, peach2_images)
    yield f(2)
    f.stop_all()


@pytest.fixture(autouse=True)
def _kernel_log_guard(request):
    yield
    if not _clusters:
        return
    errors = []
    for c in list(_clusters):
        errors += _kernel_problems(c)
    if errors:
        _problems.extend(errors)
        pytest.fail("kernel problems in guest logs during %s:\n%s"
                    % (request.node.nodeid, "\n".join(errors)), pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    if _problems and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _problems:
        terminalreporter.section("PEACH2 guest kernel problems")
        for p in _problems:
            terminalreporter.write_line(p)
