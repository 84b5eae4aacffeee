"""Host-only: the tests' window on include/peach2/*.h (peach2_testlib.hw). The values come
from the C compiler, so expressions, enums and X-macro tables all read as the C code
that uses them reads them."""

import pytest

from peach2_testlib import err_code, header_constants, hw


def test_expressions_and_enums_are_evaluated():
    assert hw("PEACH2_SLICE_SIZE") == 1 << hw("PEACH2_SLICE_SHIFT")
    assert hw("PEACH2_WINDOW_SIZE") == hw("PEACH2_MAX_NODES") * hw("PEACH2_SLICE_SIZE")
    assert hw("PEACH2_MAILBOX_SLOT_SIZE") * hw("PEACH2_MAILBOX_SLOTS") == hw("PEACH2_MAILBOX_SIZE")
    assert hw("PEACH2_PORT_E") != hw("PEACH2_PORT_W")       # enum members
    assert hw("PEACH2_IOC_INFO") != hw("PEACH2_IOC_ALLOC")  # ioctl numbers


def test_card_error_codes_are_distinct_names():
    codes = {n: v for n, v in header_constants().items()
             if n.startswith("PEACH2_ERR_") and n not in ("PEACH2_ERR_VALID", "PEACH2_ERR_NR_CODES")}
    assert len(codes) > 20, codes
    assert len(set(codes.values())) == len(codes), codes
    assert all(v < hw("PEACH2_ERR_NR_CODES") for v in codes.values()), codes
    assert err_code("NONE") == 0
    assert err_code("NO_SUCH_NODE") == hw("PEACH2_ERR_NO_SUCH_NODE")


def test_unknown_names_are_a_clear_error():
    with pytest.raises(KeyError, match="PEACH2_NO_SUCH_THING"):
        hw("PEACH2_NO_SUCH_THING")
    with pytest.raises(KeyError):
        hw("PEACH2_DEV_PREFIX")  # a string, not an integer
