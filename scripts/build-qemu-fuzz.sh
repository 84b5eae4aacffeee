#!/usr/bin/env bash
# Build qemu-fuzz-x86_64 with QEMU's generic-fuzz target `generic-fuzz-peach2`
# (clang, libFuzzer, ASan/UBSan) into $PEACH2_BUILD/qemu-fuzz-x86_64.
#
# Its own source and build tree ($PEACH2_CACHE/qemu-7.2/fuzz), apart from the
# one scripts/build-qemu.sh shares between checkouts: the fuzz-only patches
# (qemu-device/fuzz/qemu/*.patch) never touch that tree. Only what the target
# needs is built: no TCG (qtest drives the device), the q35 machine and the
# card only (qemu-device/fuzz/qemu/peach2-fuzz.mak). Finished binaries are
# cached per device-source hash, like build-qemu.sh's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

QDIR=$PEACH2_CACHE/qemu-$PEACH2_QEMU_VERSION
FDIR=$QDIR/fuzz
FUZZ=$PEACH2_TOP/qemu-device/fuzz/qemu
KEY=$( (peach2_device_hash; cat "$FUZZ"/*.patch "$FUZZ"/*.mak "$0") | sha256sum | cut -c1-16)
BIN=$FDIR/bin/qemu-fuzz-x86_64-$KEY
use_bin() {
  touch "$BIN"
  # The BIOS q35 loads even under qtest: QEMU looks in ../share/qemu of the
  # binary's directory (this build has no install prefix); Debian's blobs.
  mkdir -p "$FDIR/share/qemu"
  for f in /usr/share/seabios/* /usr/share/qemu/*; do
    [ -e "$FDIR/share/qemu/${f##*/}" ] || ln -s "$f" "$FDIR/share/qemu/${f##*/}"
  done
  mkdir -p "$PEACH2_BUILD"
  ln -sfn "$BIN" "$PEACH2_BUILD/qemu-fuzz-x86_64"
}
if [ -x "$BIN" ]; then
  say "cached: $BIN"
  use_bin
  exit 0
fi
command -v clang >/dev/null && command -v clang++ >/dev/null \
  || die "clang not found: run scripts/install-deps.sh"
mkdir -p "$FDIR/bin"
exec 9>"$FDIR/.lock"
flock 9
if [ -x "$BIN" ]; then
  say "cached: $BIN"
  use_bin
  exit 0
fi

# 1. Source: Debian's source package, as build-qemu.sh downloads it (under its lock).
if ! ls "$QDIR"/dl/qemu_*.dsc >/dev/null 2>&1; then
  mkdir -p "$QDIR/dl"
  (flock 8; cd "$QDIR/dl" && { ls qemu_*.dsc >/dev/null 2>&1 || apt-get source --download-only -q qemu; }) 8>"$QDIR/.lock" \
    || die "apt-get source qemu failed: run scripts/install-deps.sh (adds deb-src) and retry"
fi
SRC=$FDIR/src
FUZZ_PATCHES=$(cat "$FUZZ"/*.patch "$PEACH2_TOP"/qemu-device/patches/*.patch | sha256sum | cut -c1-16)
if [ -f "$SRC/.extracted" ] && [ "$(cat "$SRC/.peach2-patches" 2>/dev/null)" != "$FUZZ_PATCHES" ]; then
  say "QEMU patches changed: extracting a clean fuzz source tree (full rebuild follows)"
  rm -rf "$SRC" "$FDIR/build"
fi
if [ ! -f "$SRC/.extracted" ]; then
  say "extracting QEMU source for the fuzz build"
  rm -rf "$SRC"
  dpkg-source --no-check -x "$(ls "$QDIR"/dl/qemu_*.dsc | head -n1)" "$SRC" >/dev/null
  touch "$SRC/.extracted"
fi
grep -q "^7\.2" "$SRC/VERSION" || die "unexpected QEMU version $(cat "$SRC/VERSION") in $SRC"

# 2. The device and our QEMU patches, then the fuzz-only ones (each applied once).
"$PEACH2_TOP/qemu-device/install-into-qemu.sh" "$SRC"
for p in "$FUZZ"/*.patch; do
  patch -d "$SRC" -p1 -R --dry-run -s -f <"$p" >/dev/null 2>&1 && continue
  patch -d "$SRC" -p1 -N -s <"$p" || die "$(basename "$p") does not apply to $SRC"
done
cmp -s "$FUZZ/peach2-fuzz.mak" "$SRC/configs/devices/x86_64-softmmu/peach2-fuzz.mak" \
  || cp "$FUZZ/peach2-fuzz.mak" "$SRC/configs/devices/x86_64-softmmu/peach2-fuzz.mak"
echo "$FUZZ_PATCHES" >"$SRC/.peach2-patches"

# 3. Configure once, then build incrementally.
if [ ! -f "$FDIR/build/build.ninja" ]; then
  say "configuring the fuzz QEMU (clang, --enable-fuzzing --enable-sanitizers, q35 + peach2, no TCG)"
  mkdir -p "$FDIR/build"
  (cd "$FDIR/build" && "$SRC/configure" --cc=clang --cxx=clang++ --target-list=x86_64-softmmu \
      --enable-fuzzing --enable-sanitizers \
      --without-default-features --without-default-devices --with-devices-x86_64=peach2-fuzz \
      --disable-tcg --enable-kvm \
      --disable-docs --disable-werror --disable-user --disable-install-blobs \
      >"$FDIR/configure.log" 2>&1) || { tail -n 30 "$FDIR/configure.log"; die "fuzz QEMU configure failed (log: $FDIR/configure.log)"; }
fi
say "building qemu-fuzz-x86_64 (cold: ~1200 steps, ~4 min on 2 quiet cores, 36 under load; warm: seconds)"
peach2_ninja "$FDIR/build" qemu-fuzz-x86_64 || die "fuzz QEMU build failed"
[ -x "$FDIR/build/qemu-fuzz-x86_64" ] || die "the fuzz QEMU build produced no binary"
cp "$FDIR/build/qemu-fuzz-x86_64" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
use_bin
ls -t "$FDIR"/bin/qemu-fuzz-x86_64-* 2>/dev/null | tail -n +4 | \
  while read -r old; do if [ -n "$(find "$old" -mtime +3)" ]; then rm -f "$old"; fi; done
say "built $BIN"
