#!/usr/bin/env bash
# Fetch Debian's QEMU 7.2 source, add the peach2 device, build qemu-system-x86_64.
# The build tree is cached per QEMU version (incremental rebuilds when the device
# changes); finished binaries are cached per device-source hash.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

QDIR=$PEACH2_CACHE/qemu-$PEACH2_QEMU_VERSION
BIN=$(peach2_qemu_bin)
# This checkout's QEMU: scripts/cluster.py boots $PEACH2_BUILD/qemu-system-x86_64.
use_bin() {
  touch "$BIN"
  ln -sf "$BIN" "$QDIR/bin/qemu-system-x86_64"
  mkdir -p "$PEACH2_BUILD"
  ln -sfn "$BIN" "$PEACH2_BUILD/qemu-system-x86_64"
}
if [ -x "$BIN" ]; then
  say "cached: $BIN"
  use_bin
  exit 0
fi
mkdir -p "$QDIR/bin" "$QDIR/dl"
# One build at a time: every checkout on this machine shares the source and build tree.
exec 9>"$QDIR/.lock"
flock 9
if [ -x "$BIN" ]; then # another checkout built this very device while we waited
  say "cached: $BIN"
  use_bin
  exit 0
fi

# 1. Source, from Debian's source package (needs a deb-src entry: scripts/install-deps.sh).
# Our QEMU patches are applied once to the extracted tree; when the set of
# patches changes, start again from a clean extraction (patches are never
# un-applied in place).
PATCHES_HASH=$(cat "$PEACH2_TOP"/qemu-device/patches/*.patch 2>/dev/null | sha256sum | cut -c1-16)
if [ -f "$QDIR/src/.extracted" ] && [ "$(cat "$QDIR/src/.peach2-patches" 2>/dev/null)" != "$PATCHES_HASH" ] \
   && [ -f "$QDIR/src/.peach2-patches" ]; then
  say "QEMU patches changed: extracting a clean source tree (full rebuild follows)"
  rm -rf "$QDIR/src"
fi
if [ ! -f "$QDIR/src/.extracted" ]; then
  if ! ls "$QDIR"/dl/qemu_*.dsc >/dev/null 2>&1; then
    say "downloading QEMU source package (apt-get source qemu, ~24 MB)"
    (cd "$QDIR/dl" && apt-get source --download-only -q qemu) \
      || die "apt-get source qemu failed: run scripts/install-deps.sh (adds deb-src) and retry"
  fi
  say "extracting QEMU source"
  rm -rf "$QDIR/src"
  dsc=$(ls "$QDIR"/dl/qemu_*.dsc | head -n1)
  dpkg-source --no-check -x "$dsc" "$QDIR/src" >/dev/null
  touch "$QDIR/src/.extracted"
fi
SRC=$QDIR/src
grep -q "^7\.2" "$SRC/VERSION" || die "unexpected QEMU version $(cat "$SRC/VERSION") in $SRC"

# 2. Add the device (copied, so the build tree never points into a checkout that may vanish).
"$PEACH2_TOP/qemu-device/install-into-qemu.sh" "$SRC"
echo "$PATCHES_HASH" >"$SRC/.peach2-patches"

# 3. Configure once, then build incrementally.
if [ ! -f "$QDIR/build/build.ninja" ]; then
  say "configuring QEMU (x86_64-softmmu, TCG)"
  mkdir -p "$QDIR/build"
  (cd "$QDIR/build" && "$SRC/configure" --target-list=x86_64-softmmu \
      --without-default-features --enable-tcg --enable-kvm --enable-slirp \
      --enable-cap-ng --enable-attr --enable-fdt=system \
      --disable-docs --disable-werror --disable-user --disable-install-blobs \
      >"$QDIR/configure.log" 2>&1) || { tail -n 30 "$QDIR/configure.log"; die "QEMU configure failed (log: $QDIR/configure.log)"; }
fi
say "building qemu-system-x86_64 (cold: ~5 min on 2 cores; warm: seconds)"
peach2_ninja "$QDIR/build" qemu-system-x86_64 || die "QEMU build failed"
[ -x "$QDIR/build/qemu-system-x86_64" ] || die "QEMU build produced no binary"
cp "$QDIR/build/qemu-system-x86_64" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
use_bin
# Keep the newest few device builds, and any that a checkout used in the last 3 days
# (use_bin touches it): other checkouts on this machine boot their own.
ls -t "$QDIR"/bin/qemu-system-x86_64-* 2>/dev/null | tail -n +6 | \
  while read -r old; do if [ -n "$(find "$old" -mtime +3)" ]; then rm -f "$old"; fi; done
say "built $BIN"
