#!/bin/sh
# SPDX-License-Identifier: MIT
# libtca.so: SONAME libtca.so.1, exports only tca* symbols, and needs no
# libstdc++/libgcc_s (the guest initramfs has only libc).
set -eu
lib=$1
fail() { echo "check_shared_lib: FAIL: $*"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libtca\.so\.1\]' || fail "SONAME is not libtca.so.1"
if readelf -d "$lib" | grep NEEDED | grep -Eq 'libstdc\+\+|libgcc_s'; then
	fail "needs libstdc++ or libgcc_s: $(readelf -d "$lib" | grep NEEDED)"
fi
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^tca' || true)
[ -z "$bad" ] || fail "exports non-tca symbols: $bad"
n=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c '^tca')
echo "check_shared_lib: ok ($n tca* symbols, NEEDED: $(readelf -d "$lib" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' '))"
