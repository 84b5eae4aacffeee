#!/bin/sh
# SPDX-License-Identifier: MIT
# End-to-end on the host: two processes play nodes 0 and 1 over the fake
# driver (fake/fake_peach2.c) and run the real programs against each other:
# ping-pong (also with the second node starting late, and over stale
# mailbox records left by the previous run), the PIO placement check with
# small chunks so that writes cross chunk boundaries, the DMA programs (the
# fake copies inside the ioctl: no timing, but every byte checked), and the
# read proxy (the fake answers inside the requester's ioctl).
# usage: e2e_programs.sh FAKE_LIB TCA_CHECK TCA_BENCH
set -eu
fake=$1 check=$2 bench=$3
dir=$(mktemp -d /dev/shm/tca-e2e.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TCA_FAKE_DIR=$dir TCA_FAKE_NODES=2 TCA_DEVICE=/fake/peach2-0

# on NODE CMD...: run CMD as node NODE over the fake driver.
on() {
	n=$1
	shift
	TCA_FAKE_NODE=$n LD_PRELOAD=$fake "$@"
}

# pair NAME DELAY CMD0... -- CMD1...: node 0 and node 1 concurrently (node 1
# starts DELAY seconds later); both must exit 0.
pair() {
	name=$1 delay=$2
	shift 2
	a=""
	while [ "$1" != "--" ]; do a="$a $1"; shift; done
	shift
	(set +e; on 0 $a >"$dir/$name.0" 2>&1; echo $? >"$dir/$name.0.rc") &
	sleep "$delay"
	(set +e; on 1 "$@" >"$dir/$name.1" 2>&1; echo $? >"$dir/$name.1.rc") &
	wait
	for n in 0 1; do
		if [ "$(cat "$dir/$name.$n.rc")" != 0 ]; then
			echo "e2e: FAIL: $name node $n exited $(cat "$dir/$name.$n.rc"):"
			cat "$dir/$name.$n"
			exit 1
		fi
	done
}

expect() { # FILE PATTERN
	grep -q "$2" "$1" || { echo "e2e: FAIL: '$2' not in $1:"; cat "$1"; exit 1; }
}

rows() { # CSV EXPECTED_LINES
	[ "$(wc -l <"$1")" = "$2" ] || { echo "e2e: FAIL: $1 has not $2 lines:"; cat "$1"; exit 1; }
}

export TCA_FAKE_CHUNK=4096
pair pp1 0 "$bench" pingpong --peer 1 --min 1 --max 8192 --iters 200 --warmup 5 --csv "$dir/pp.csv" \
	-- "$bench" pingpong --peer 0 --min 1 --max 8192 --iters 200 --warmup 5
expect "$dir/pp1.0" "pingpong: PASS: all 2870 messages verified byte for byte"
expect "$dir/pp1.1" "pingpong: PASS: all 2870 messages verified byte for byte"
rows "$dir/pp.csv" 15
cat "$dir/pp1.0"

# Again in the same mailboxes (stale records from the run above), odd
# sizes, node 1 a second late.
pair pp2 1 "$bench" pingpong --peer 1 --sizes 3,13,4097 --iters 50 \
	-- "$bench" pingpong --peer 0 --sizes 3,13,4097 --iters 50
expect "$dir/pp2.0" "pingpong: PASS: all 180 messages verified byte for byte"

# Peers with different parameters must not pair: both time out cleanly.
(set +e; on 0 "$bench" pingpong --peer 1 --sizes 8 --iters 5 --exchange-timeout-ms 1500 \
	>"$dir/mm.0" 2>&1; echo $? >"$dir/mm.0.rc") &
(set +e; on 1 "$bench" pingpong --peer 0 --sizes 16 --iters 5 --exchange-timeout-ms 1500 \
	>"$dir/mm.1" 2>&1; echo $? >"$dir/mm.1.rc") &
wait
[ "$(cat "$dir/mm.0.rc")" = 1 ] && [ "$(cat "$dir/mm.1.rc")" = 1 ] || { echo "e2e: FAIL: mismatch paired"; exit 1; }
expect "$dir/mm.0" "did not answer within 1500 ms"

# PIO placement: 4 KiB chunks, 3-byte guards (odd alignment of the data).
pair pio 0 "$check" pio recv --peer 1 --size 20000 --guard 3 \
	-- "$check" pio send --peer 0
expect "$dir/pio.0" "pio recv: PASS"
expect "$dir/pio.1" "pio send: PASS"
cat "$dir/pio.0" "$dir/pio.1"
# And the other direction, big guards, node 0 late.
pair pio2 1 "$check" pio send --peer 1 --offsets 0,1,7,-1,-9 --sizes 1,2,3,5,8,9,4096,5000 \
	-- "$check" pio recv --peer 0 --size 9000 --guard 4096
expect "$dir/pio2.1" "pio recv: PASS"

# DMA: the benchmark in every mode (both roles check every message), then
# random transfers on four lanes, with chunks small enough that strided
# transfers must be redrawn and contiguous ones split.
export TCA_FAKE_CHUNK=8192
pair dmab 0 "$bench" dma --peer 1 --max 64K --iters 30 --stream-bytes 1M --csv "$dir/dmab.csv" \
	-- "$bench" dma --peer 0 --max 64K --iters 30 --stream-bytes 1M
expect "$dir/dmab.0" "dma: PASS"
expect "$dir/dmab.1" "dma: PASS"
rows "$dir/dmab.csv" 42
pair dmac 0 "$check" dma recv --peer 1 -- "$check" dma send --peer 0 --count 100
expect "$dir/dmac.0" "dma recv: PASS: 400 transfers"
expect "$dir/dmac.1" "dma send: PASS: 400 transfers"
cat "$dir/dmac.1"
# The PIO/DMA crossover (one side measures, the other offers its memory).
pair xo 0 "$bench" crossover --peer 1 --iters 5 --sizes 64,4096 --csv "$dir/xo.csv" \
	-- "$bench" crossover --peer 0 --iters 5 --sizes 64,4096
expect "$dir/xo.0" "PIO is cheaper up to"
rows "$dir/xo.csv" 5

# Read proxy: node 1 gets from and adds to what node 0 exports; node 0's
# server only sleeps (the fake answers inside the requester's ioctl).
export TCA_FAKE_CHUNK=262144
(set +e; on 0 "$check" rp serve --peer 1 --seed 9 --counter --rounds 3 --seconds 60 >"$dir/rps" 2>&1
 echo $? >"$dir/rps.rc") &
(set +e
 on 1 "$check" rp get-verify --peer 0 --seed 9 --iters 200 >"$dir/rpf" 2>&1 \
	|| echo "e2e: FAIL: get-verify" >>"$dir/rpf"
 on 1 "$check" rp faa --peer 0 --seed 9 --count 300 >>"$dir/rpf" 2>&1 \
	|| echo "e2e: FAIL: faa" >>"$dir/rpf"
 on 1 "$check" rp get-verify --peer 0 --seed 9 --iters 100 --inflight 8 >>"$dir/rpf" 2>&1 \
	|| echo "e2e: FAIL: get-verify --inflight" >>"$dir/rpf")
wait
if grep -q FAIL "$dir/rpf" || [ "$(cat "$dir/rps.rc")" != 0 ]; then cat "$dir/rps" "$dir/rpf"; exit 1; fi
expect "$dir/rpf" "get-verify: 200 gets, .* bytes, 0 mismatches, 0 errors"
expect "$dir/rpf" "faa: 300 adds of 1, first old=0, last old=299, counter now=300, monotonic=yes"
expect "$dir/rps" "serve: counter=300"
pair rpu 0 "$check" rp serve --peer 1 --unexport-after-ms 200 -- "$check" rp expect-refused --peer 0
expect "$dir/rpu.1" "get refused: TCA_ENOTEXPORTED status=[0-9]* (RP_NOT_EXPORTED).*PASS"
pair rpr 0 "$check" rp serve --peer 1 --export-len 4096 --whole-handle \
	-- "$check" rp expect-refused --peer 0 --offset 8192 --expect remote:RP_RANGE
pair rpk 0 "$check" rp serve --peer 1 --free-after-ms 100 -- "$check" rp expect-refused --peer 0
pair rpx 0 "$check" rp serve --peer 1 --exit-after-ms 300 \
	-- "$check" rp flood --peer 0 --seconds 1 --allow-refused --no-done
expect "$dir/rpx.1" "flood: .* timeout=0 other=0"
cat "$dir/rpf" "$dir/rpx.1"
pair gb 0 "$bench" get --peer 1 --iters 20 --stream-bytes 4M --csv "$dir/gb.csv" \
	-- "$bench" get --peer 0 --iters 20 --stream-bytes 4M
expect "$dir/gb.0" "get: PASS"
expect "$dir/gb.0" "get 8 B / put 8 B latency"
expect "$dir/gb.1" "server: done"
rows "$dir/gb.csv" 25
cat "$dir/gb.0"

on 0 "$check" info >"$dir/info" 2>&1
expect "$dir/info" "node_id=0 node_count=2"
echo "e2e: ok"
