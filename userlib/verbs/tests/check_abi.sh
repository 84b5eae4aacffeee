#!/bin/sh
# SPDX-License-Identifier: MIT
# The drop-in libibverbs.so.1 against the programs it must serve: its SONAME,
# that every libibverbs symbol@version that Debian's ibverbs-utils, perftest
# and the provider libraries they load (libmlx5, libefa, librdmacm) import is
# defined, that nothing else leaks out (libtca, C++ runtime), and that it
# needs nothing beyond libc.
set -eu
lib=$1
fail() { echo "check_abi: FAIL: $*"; exit 1; }

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libibverbs.so.1 ] || fail "SONAME is '$soname', want libibverbs.so.1"

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for n in $needed; do
	case $n in libc.so.6|libm.so.6|ld-linux-x86-64.so.2) ;; *) fail "needs $n (only libc allowed)";; esac
done

defined=$(mktemp) imported=$(mktemp)
trap 'rm -f "$defined" "$imported"' EXIT
readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 ~ /@/ { sub(/@@/, "@", $8); print $8 }' | sort -u >"$defined"
grep -v -E '^(ibv_|_ibv_|mbps_to_ibv_rate|mult_to_ibv_rate|verbs_|_verbs_|__verbs_log|execute_ioctl|__ioctl_final_num_attrs)' "$defined" \
	| grep -v -E '^IBVERBS_' && fail "exports symbols outside the libibverbs ABI (above)"

clients="/usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong /usr/bin/ibv_ud_pingpong
	/usr/bin/ibv_srq_pingpong /usr/bin/ib_send_lat /usr/bin/ib_send_bw /usr/bin/ib_write_lat
	/usr/bin/ib_write_bw /usr/bin/ib_read_lat /usr/bin/ib_read_bw /usr/bin/ib_atomic_lat
	/usr/bin/ib_atomic_bw"
for d in /usr/lib/x86_64-linux-gnu; do
	clients="$clients $d/libmlx5.so.1 $d/libefa.so.1 $d/librdmacm.so.1"
done
for c in $clients; do
	[ -e "$c" ] || fail "$c missing: install ibverbs-utils, perftest (scripts/install-deps.sh)"
	readelf --dyn-syms -W "$c" | awk '$7 == "UND" && $8 ~ /@IBVERBS_/ { print $8 }' | sed 's/ (.*//'
done | sort -u >"$imported"
missing=$(comm -23 "$imported" "$defined")
[ -z "$missing" ] || fail "not defined: $missing"
echo "check_abi: PASS: $(wc -l <"$defined") symbols exported, all $(wc -l <"$imported") imports of $(echo $clients | wc -w) clients defined"
