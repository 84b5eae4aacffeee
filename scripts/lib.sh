# Shared settings for the project's scripts. Source it; do not run it.
# shellcheck shell=bash
PEACH2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Slow downloads and the QEMU build live outside the checkout, keyed by version,
# so a fresh clone on the same machine starts warm.
PEACH2_CACHE=${PEACH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peach2}
PEACH2_GUEST_KVER=${PEACH2_GUEST_KVER:-6.1.0-56-amd64}
PEACH2_QEMU_VERSION=${PEACH2_QEMU_VERSION:-7.2}
PEACH2_BUILD=${PEACH2_BUILD:-$PEACH2_TOP/build}

say() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# Hash of every file that goes into the QEMU binary from this tree.
peach2_device_hash() {
  (cd "$PEACH2_TOP" && find qemu-device include firmware/lib model/trace -type f \
     \( -name '*.c' -o -name '*.cc' -o -name '*.h' -o -name '*.build' -o -name 'Kconfig*' \
        -o -name 'trace-events' -o -name '*.patch' \) \
     -not -path '*/tests/*' -not -path 'qemu-device/fuzz/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}
peach2_qemu_bin() { echo "$PEACH2_CACHE/qemu-$PEACH2_QEMU_VERSION/bin/qemu-system-x86_64-$(peach2_device_hash)"; }

# ninja TARGET in build directory DIR, on every core; of its [n/N] lines every
# 100th is kept (the progress report), everything else is shown.
peach2_ninja() {
  (cd "$1" && ninja -j"$(nproc)" "$2" 2>&1 | \
     awk '/^\[[0-9]+\/[0-9]+\]/ { n++; if (n % 100 == 0) { print; fflush() } next } { print; fflush() }')
}
