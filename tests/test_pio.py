"""PIO across two VMs: data integrity, placement, errors (issue: foundation).

`tca_check pio` (userlib/tools/check/pio.cpp) does the checking inside the guests: the
receiver owns a buffer between canary-filled guards and, after every write, checks
that exactly the addressed bytes changed and hold the sender's data.
"""

import re
import time

import pytest

from peach2_testlib import check, err_code, sysfs_read

pytestmark = pytest.mark.vm

# Unaligned and odd sizes on purpose; offsets at both ends and around 8-byte words.
SIZES = "1,2,3,4,5,7,8,9,13,16,31,63,64,100,255,256,257,1000,4095,4096,4097"
OFFSETS = "0,1,2,3,5,7,8,15,63,255,256,4093,-1,-7,-64,-257"


def _pair(cluster, sender, receiver, extra=""):
    cmds = {
        receiver: "tca_check pio recv --peer %d --size 16384 --guard 4096" % sender,
        sender: "tca_check pio send --peer %d --offsets %s --sizes %s %s"
                % (receiver, OFFSETS, SIZES, extra),
    }
    return cluster.run_all(lambda i: cmds.get(i, "true"), timeout=900,
                           nodes=[sender, receiver])


@pytest.mark.parametrize("sender,receiver", [(0, 1), (1, 0)])
def test_pio_data_arrives_intact_and_only_where_addressed(cluster2, sender, receiver):
    (rc_s, out_s), (rc_r, out_r) = _pair(cluster2, sender, receiver)
    assert rc_s == 0, "sender failed:\n" + out_s
    assert rc_r == 0, "receiver failed:\n" + out_r
    assert "PASS" in out_r.splitlines()[-1], out_r
    # The receiver really checked many writes (not a vacuous pass).
    m = re.search(r"(\d+) writes", out_r)
    assert m and int(m.group(1)) >= 200, out_r


def _err(cluster, node, name):
    return sysfs_read(cluster, node, name)


def test_store_to_nonexistent_node_is_reported_not_fatal(cluster2):
    before = int(_err(cluster2, 0, "err_count"))
    out = check(cluster2, 0, "tca_check pio bad-node --node 9")
    assert "PASS" in out.splitlines()[-1], out
    after = int(_err(cluster2, 0, "err_count"))
    assert after > before
    assert int(_err(cluster2, 0, "err_last")) == err_code("NO_SUCH_NODE")
    assert "NO_SUCH_NODE" in _err(cluster2, 0, "errors_by_code")
    # The node and the link are fine afterwards: traffic still flows.
    assert _err(cluster2, 0, "link_e").startswith("up")
    (rc_s, out_s), (rc_r, out_r) = cluster2.run_all(
        lambda i: ("tca_check pio send --peer 1 --offsets 0 --sizes 8,4096" if i == 0
                   else "tca_check pio recv --peer 0"), timeout=300)
    assert rc_s == 0 and rc_r == 0, out_s + out_r


def test_card_refuses_writes_outside_registered_buffers(cluster2):
    """A store to node 1's memory that is no buffer (bus address 0x1000) must not
    land: node 1's card counts NOT_REGISTERED."""
    before = int(_err(cluster2, 1, "err_count"))
    check(cluster2, 0, "tca_check pio raw --node 1 --offset 0x1000")

    deadline = time.time() + 10
    while time.time() < deadline and int(_err(cluster2, 1, "err_count")) == before:
        time.sleep(0.2)
    assert int(_err(cluster2, 1, "err_count")) > before
    assert "NOT_REGISTERED" in _err(cluster2, 1, "errors_by_code")
