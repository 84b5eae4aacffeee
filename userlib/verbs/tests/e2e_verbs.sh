#!/bin/sh
# SPDX-License-Identifier: MIT
# End to end on the host: Debian's unmodified ibverbs-utils and perftest
# programs, as two processes (node 0 the server, node 1 the client) over the
# fake driver (LD_PRELOAD), with this library first on LD_LIBRARY_PATH.
# Every pair must exit 0, and each program's own result line must be there
# (rc_pingpong with -c validates every buffer it receives).
#   e2e_verbs.sh FAKE_DRIVER_SO VERBS_LIB_DIR [CHECK_TOOL]
set -eu
fake=$1 libdir=$2 check=${3:-}
dir=$(mktemp -d /dev/shm/pv-e2e.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TCA_FAKE_DIR=$dir TCA_FAKE_NODES=2 TCA_DEVICE=/fake/peach2-0 LD_LIBRARY_PATH=$libdir
# A port per run, so that concurrent runs (other checkouts) do not meet.
port=$((20000 + $$ % 20000))
runs=0

fail() {
	echo "e2e_verbs: FAIL: $*"
	for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	exit 1
}

# The client connects once: start it when the server listens on $port (on a
# busy machine the server's set-up takes longer than any fixed sleep), or
# when the server has already ended (its failure is reported as such).
wait_listening() {
	i=0
	while [ $i -lt 400 ] && [ ! -e "$dir/$1.srv.rc" ] &&
		[ -z "$(ss -Hltn "sport = :$port")" ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# pair NAME PROG ARGS...: server on node 0, client on node 1 (localhost).
pair() {
	name=$1 prog=$2
	shift 2
	port=$((port + 1))
	rm -f "$dir"/mem* "$dir"/mbox* "$dir"/exports* "$dir"/names*
	rm -f "$dir/$name.srv.rc"
	(set +e; TCA_FAKE_NODE=0 LD_PRELOAD=$fake timeout 120 stdbuf -oL "$prog" -p $port "$@" \
		>"$dir/$name.srv.log" 2>&1; echo $? >"$dir/$name.srv.rc") &
	wait_listening "$name"
	set +e
	TCA_FAKE_NODE=1 LD_PRELOAD=$fake timeout 120 stdbuf -oL "$prog" -p $port "$@" localhost >"$dir/$name.cli.log" 2>&1
	crc=$?
	set -e
	wait
	[ "$crc" = 0 ] || fail "$name: client exited $crc"
	[ "$(cat "$dir/$name.srv.rc")" = 0 ] || fail "$name: server exited $(cat "$dir/$name.srv.rc")"
	runs=$((runs + 1))
}

expect() { # NAME PATTERN: in both sides' output
	for side in srv cli; do
		grep -q -- "$2" "$dir/$1.$side.log" || fail "$1 ($side): '$2' not in its output"
	done
}

one() { # NAME PROG ARGS...: a single process on node 0
	name=$1 prog=$2
	shift 2
	set +e
	TCA_FAKE_NODE=0 LD_PRELOAD=$fake timeout 60 "$prog" "$@" >"$dir/$name.srv.log" 2>&1
	rc=$?
	set -e
	[ $rc = 0 ] || fail "$name exited $rc"
	cp "$dir/$name.srv.log" "$dir/$name.cli.log"
	runs=$((runs + 1))
}

one devices ibv_devices
expect devices "peach2_0"
one devinfo ibv_devinfo -v
expect devinfo "hca_id:	peach2_0"
expect devinfo "PORT_ACTIVE"
expect devinfo "link_layer:		InfiniBand"
expect devinfo "GID\[  0\]:.*fe80:0000:0000:0000:5045:4332:0000:0000"

# rc_pingpong validates every message (-c): small (low-latency ring),
# a high-bandwidth record small enough for PIO, page-sized and big (DMA,
# fragments), polling and events.
for s in 1 216 1000 4096 300000; do
	pair rc$s ibv_rc_pingpong -g 0 -c -n 200 -s $s
	expect rc$s "200 iters in"
done
pair rce ibv_rc_pingpong -g 0 -c -n 200 -s 4096 -e
expect rce "200 iters in"
pair srq ibv_srq_pingpong -g 0 -n 200 -s 1024
expect srq "200 iters in"
pair srqe ibv_srq_pingpong -g 0 -n 100 -s 64 -e
expect srqe "100 iters in"
pair ud ibv_ud_pingpong -g 0 -c -n 200 -s 1024
expect ud "200 iters in"

# perftest: latency and bandwidth programs, a few sizes each. Their result
# table has one row per size ("<bytes> <iterations> ...").
for p in ib_send_lat ib_write_lat ib_read_lat; do
	for s in 2 1024 65536; do
		pair ${p}_$s $p -n 100 -s $s
		grep -Eq "^ *$s +100 " "$dir/${p}_$s.cli.log" || fail "${p}_$s: no result row"
	done
done
pair atomic ib_atomic_lat -n 200
grep -Eq "^ *8 +200 " "$dir/atomic.cli.log" || fail "atomic: no result row"
for p in ib_write_bw ib_send_bw ib_read_bw; do
	for s in 4096 1048576; do
		pair ${p}_$s $p -n 200 -s $s
		grep -Eq "^ *$s +200 " "$dir/${p}_$s.cli.log" || fail "${p}_$s: no result row"
	done
done
pair atomicbw ib_atomic_bw -n 500
pair sendlatall ib_send_lat -a -n 20
grep -Eq "^ *8388608 +20 " "$dir/sendlatall.cli.log" || fail "sendlatall: no 8 MiB row"

if [ -n "$check" ]; then
	# The library's own checks of error semantics, between two processes.
	for t in access rnr badwr flush read stream slowreg slowconn slowbounce remr udgone renew; do
		pair check_$t "$check" $t
		expect check_$t "PASS"
	done
	# slowreg proves something only if the server's registration was slow.
	grep -Eq "slowreg: PASS \(server\): ibv_reg_mr took ([5-9]|[1-9][0-9])\." "$dir/check_slowreg.srv.log" ||
		fail "check_slowreg: the server's ibv_reg_mr was not held (TCA_FAKE_PIN_DELAY_MS)"
	grep -Eq "slowconn: PASS \(server\): connecting a QP took ([5-9]|[1-9][0-9])\." "$dir/check_slowconn.srv.log" ||
		fail "check_slowconn: the server's ibv_modify_qp was not held (TCA_FAKE_ALLOC_DELAY_MS)"
	# slowbounce: the Write's bounce buffer was refused, not waited for under the lock.
	grep -Eq "slowbounce: PASS \(server\): ibv_post_send of the Write returned in 0\." "$dir/check_slowbounce.srv.log" ||
		fail "check_slowbounce: the server's ibv_post_send waited for its bounce buffer"
	# renew proves something only if the server's renewal did fail.
	grep -q "renewing the lease on peer QP .* failed .*; trying again" "$dir/check_renew.srv.log" ||
		fail "check_renew: the server's lease renewal never failed (fake_rp_control unreach)"
	# No renewal succeeds: the server's QP stops writing when its lease ends.
	pair check_leaseout "$check" leaseout
	expect check_leaseout "PASS"
	grep -q "the lease on peer QP .* ran out, not renewed" "$dir/check_leaseout.srv.log" ||
		fail "check_leaseout: the server did not say its lease ran out"
	# Lookups of 5 s (the fake answers late) do not hold up the sleeping server's
	# acknowledgements: its renewals have a thread of their own.
	pair check_slowrenew "$check" slowrenew
	expect check_slowrenew "PASS"
	grep -q "renewing the lease on QP .* took" "$dir/check_slowrenew.srv.log" ||
		fail "check_slowrenew: no renewal of the server was slow (fake_rp_control delay_us)"
	# The server's first renewal is lost (the fake never answers it): libtca
	# sends the lookup again after 100 ms instead of waiting out the request
	# timeout (1.5 s here, past the lease's end).
	export TCA_RP_TIMEOUT_MS=1500
	pair check_lostrenew "$check" lostrenew
	unset TCA_RP_TIMEOUT_MS
	expect check_lostrenew "PASS"
	! grep -q "ran out\|renewing .* failed" "$dir/check_lostrenew.srv.log" ||
		fail "check_lostrenew: the server's lost renewal was not sent again (fake_rp_control drop)"
	grep -q "lookup of QP .* request 2 of 2 answered after .* the first went unanswered" \
		"$dir/check_lostrenew.srv.log" ||
		fail "check_lostrenew: the server did not say its first request went unanswered"
	# A Write stream through one rkey does not wait for the rkey's lookups
	# (150 ms each): the renewer renews its lease.
	pair check_slowkey "$check" slowkey
	expect check_slowkey "PASS"
	# PCIe orders a card's writes, not the bytes within one: with every DMA
	# copy of the fake storing its last 8 bytes first and the rest 200 us
	# later, and every small packet sent by its slot's chain, no packet is
	# taken before its bytes (its PSN pair comes in a write of its own).
	export PEACH2_VERBS_LL=dma TCA_FAKE_DMA_TEAR_US=200
	pair check_torn "$check" -n 1500 stream
	unset PEACH2_VERBS_LL TCA_FAKE_DMA_TEAR_US
	expect check_torn "PASS"
	# The server exits without a word after 300 messages: the client's
	# outstanding Sends end with an error, not a hang.
	pair check_peer "$check" -n 300 peer
	grep -q "peer: PASS (client).*transport retry counter exceeded" "$dir/check_peer.cli.log" ||
		fail "check_peer: no PASS with a retry error in the client's output"
	# The server calls exit(0) with its QP, CQ and MR alive while a thread
	# polls them (as UCX's async thread does when an MPI rank exits without
	# MPI_Finalize): it exits 0, the thread polled on through every exit
	# handler, and the client sees the failure of a killed peer.
	pair check_exit "$check" -n 300 exit
	grep -q "exit: PASS (client).*transport retry counter exceeded" "$dir/check_exit.cli.log" ||
		fail "check_exit: no PASS with a retry error in the client's output"
	grep -Eq "polled [1-9][0-9]* times during the last exit handler" "$dir/check_exit.srv.log" ||
		fail "check_exit: the polling thread did not poll during the server's exit handlers"
fi

echo "e2e_verbs: PASS: $runs program runs"
