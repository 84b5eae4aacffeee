#!/bin/sh
# SPDX-License-Identifier: MIT
# The programs run in a busybox initramfs: they must be statically linked.
set -eu
for p in "$@"; do
	if ! file -L "$p" | grep -q 'statically linked'; then
		echo "check_static_programs: FAIL: $p is not statically linked: $(file -L "$p")"
		exit 1
	fi
	# A static program still runs and prints its usage.
	"$p" --help >/dev/null || { echo "check_static_programs: FAIL: $p --help"; exit 1; }
done
echo "check_static_programs: ok ($*)"
