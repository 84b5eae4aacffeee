#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's unmodified UCX (ucx_info, ucx_perftest) over this library and the fake driver, on
# the host, in seconds instead of a VM boot: a developer's loop for issue 12 (not part of
# make host-test: it needs root, for a private mount namespace, and UCX's .debs).
#   ucx_host.sh FAKE_DRIVER_SO VERBS_LIB_DIR info
#   ucx_host.sh FAKE_DRIVER_SO VERBS_LIB_DIR perf TLS UCX_PERFTEST_ARGS...
# e.g. ucx_host.sh build/userlib/cmake/tests/libfake_peach2.so build/userlib/lib \
#        perf rc_verbs,ud_verbs,self -t tag_lat -n 1000 -s 8
# UCX comes from the guest's package cache (scripts/build-guest-root.py keeps the .debs in
# $PEACH2_CACHE/guest/debs), unpacked once into $UCX_ROOT (default /tmp/peach2-ucx-root).
#
# Why each step: UCX takes an IB device only if /dev/infiniband/<dev_name> is a readable
# character device (a private mount namespace with /dev under an overlay provides one, the
# host's /dev is untouched); UCX's mmap hooks bypass the fake driver's mmap interposer
# (UCX_MEM_MMAP_HOOK_MODE=none); UCX's default receive pools register 20-40 MiB per
# interface, over the fake's 32 MiB per process (smaller queues, 2 KiB segments).
set -eu
fake=$(realpath "$1") libdir=$(realpath "$2") mode=$3
shift 3
debs=${PEACH2_CACHE:-$HOME/.cache/peach2}/guest/debs
root=${UCX_ROOT:-/tmp/peach2-ucx-root}
if [ ! -x "$root/usr/bin/ucx_perftest" ]; then
	mkdir -p "$root"
	for d in "$debs"/libucx0_*.deb "$debs"/ucx-utils_*.deb "$debs"/libnuma1_*.deb \
		"$debs"/librdmacm1_*.deb "$debs"/libnl-3-200_*.deb "$debs"/libnl-route-3-200_*.deb; do
		[ -f "$d" ] || { echo "ucx_host: no $d (build the Debian guest root first)"; exit 1; }
		dpkg-deb --fsys-tarfile "$d" | tar -x -C "$root" --keep-directory-symlink
	done
fi
dir=$(mktemp -d /tmp/pv-ucx.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export TCA_FAKE_DIR="$dir" TCA_FAKE_NODES=2 TCA_DEVICE=/fake/peach2-0
export LD_LIBRARY_PATH="$libdir:$root/usr/lib/x86_64-linux-gnu"
export UCX_MEM_MMAP_HOOK_MODE=none UCX_NET_DEVICES="${UCX_NET_DEVICES:-peach2_0:1}"
export UCX_RC_VERBS_RX_QUEUE_LEN=256 UCX_UD_VERBS_RX_QUEUE_LEN=256
export UCX_RC_VERBS_TX_QUEUE_LEN=256 UCX_UD_VERBS_TX_QUEUE_LEN=256 UCX_IB_SEG_SIZE=2k

# in_ns NODE PROG ARGS...: PROG as fake node NODE, with /dev/infiniband/uverbs0 present.
in_ns() {
	node=$1
	shift
	TCA_FAKE_NODE=$node LD_PRELOAD=$fake timeout 120 unshare -m --propagation private sh -c '
		set -e
		ov=$(mktemp -d "$TCA_FAKE_DIR/ov.XXXX"); mkdir "$ov/u" "$ov/w"
		mount -t overlay overlay -o lowerdir=/dev,upperdir="$ov/u",workdir="$ov/w" /dev
		mkdir -p /dev/infiniband && ln -sf /dev/null /dev/infiniband/uverbs0
		exec "$@"' in_ns "$@"
}

case $mode in
info) in_ns 0 "$root/usr/bin/ucx_info" -d ;;
perf)
	export UCX_TLS="$1"
	shift
	port=$((21000 + $$ % 20000))
	(in_ns 0 "$root/usr/bin/ucx_perftest" -p "$port" >"$dir/server.log" 2>&1; echo $? >"$dir/server.rc") &
	sleep 1
	set +e
	in_ns 1 "$root/usr/bin/ucx_perftest" -p "$port" "$@" localhost
	rc=$?
	set -e
	wait
	echo "--- server (exit $(cat "$dir/server.rc")):"
	cat "$dir/server.log"
	exit $rc ;;
*) echo "ucx_host: mode info or perf"; exit 2 ;;
esac
