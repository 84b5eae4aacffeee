"""VM tests of the driver side of TCA Verbs (issue 11) on one node: the kselftest of
PEACH2_IOC_PIN, names, LOOKUP and the quarantine, and the Verbs library's error
semantics between two processes of one node (everything through the card's loopback:
the real driver pins, publishes and answers every lookup and read-proxy request)."""

import pytest

from peach2_testlib import check, tap_failures, wait_until

pytestmark = pytest.mark.vm


def test_kselftest_verbs(cluster2):
    c = cluster2
    rc, out = c.run(0, "/selftests/peach2_verbs_test", timeout=300)
    assert rc == 0 and not tap_failures(out), out
    assert "# Totals: pass:10 fail:0" in out, out


@pytest.mark.parametrize("test", ["access", "rnr", "flush", "stream -n 500"])
def test_verbs_checks_within_one_node(cluster2, test):
    c = cluster2
    check(c, 1, "ip link set lo up 2>/dev/null; true")
    cmd = "tca_verbs_check -p 18590 %s" % test
    check(c, 1, "(%s > /tmp/verbs_check.srv 2>&1; echo rc=$? >> /tmp/verbs_check.srv) &" % cmd)
    rc, out = c.run(1, "%s 127.0.0.1" % cmd, timeout=300)
    wait_until(lambda: "rc=" in c.run(1, "cat /tmp/verbs_check.srv")[1], timeout=30,
               what="the server's end")
    srv = check(c, 1, "cat /tmp/verbs_check.srv")
    assert rc == 0 and "PASS" in out, out
    assert "rc=0" in srv and "PASS" in srv, srv
