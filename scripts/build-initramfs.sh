#!/usr/bin/env bash
# Build the guest initramfs: $PEACH2_BUILD/guest/initramfs.cpio.gz (default), or
# $PEACH2_BUILD/guest/initramfs.cpio with PEACH2_INITRD_COMPRESS=none. Exactly one of the
# two exists afterwards; scripts/cluster.py boots whichever is there.
#
# Contents:
#   /init                      scripts/guest/init (busybox sh)
#   busybox + applet links     from Debian's busybox-static
#   /lib/modules/peach2.ko     driver/peach2.ko (required: `make -C driver`)
#   /usr/bin/*                 $PEACH2_BUILD/userlib/bin/*     (if present)
#   /usr/lib/*.so*             $PEACH2_BUILD/userlib/lib/*.so* (if present)
#   /selftests/*               $PEACH2_BUILD/selftests/*       (if present)
#   /lib/firmware/peach2/*.bin $PEACH2_BUILD/firmware/images/* (if present)
#   /usr/bin/lspci             Debian's pciutils
#   every shared library (and the loader) the dynamic ELF files need, via ldd, at the
#   same path as on the build host. /lib and /lib64 are symlinks into /usr as on Debian.
#
# The tree is staged afresh on every run (cheap); the archive is rewritten only when
# the staged tree's content hash changed, so its mtime tracks real changes.
# Env: PEACH2_INITRD_COMPRESS=gzip|none (default gzip: with the PVH vmlinux that
#      scripts/cluster.py boots, both boot equally fast; uncompressed only helps the
#      bzImage fallback, by ~1 s; numbers in tests/README.md), PEACH2_BUILD,
#      PEACH2_DRIVER_KO (default driver/peach2.ko).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KO=${PEACH2_DRIVER_KO:-$PEACH2_TOP/driver/peach2.ko}
INIT=$PEACH2_TOP/scripts/guest/init
COMPRESS=${PEACH2_INITRD_COMPRESS:-gzip}
OUTDIR=$PEACH2_BUILD/guest
UL=$PEACH2_BUILD/userlib
ST=$PEACH2_BUILD/selftests

BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "busybox not found: apt-get install busybox-static (scripts/install-deps.sh)"
LSPCI=$(command -v lspci || echo /usr/bin/lspci)
[ -x "$LSPCI" ] || die "lspci not found: apt-get install pciutils (scripts/install-deps.sh)"
command -v cpio >/dev/null || die "cpio not found: apt-get install cpio"
[ -f "$KO" ] || die "driver module $KO is missing: build it first with \`make -C driver\`"
[ -f "$INIT" ] || die "missing $INIT"
case $COMPRESS in
  none) OUT=$OUTDIR/initramfs.cpio; OTHER=$OUTDIR/initramfs.cpio.gz ;;
  gzip) OUT=$OUTDIR/initramfs.cpio.gz; OTHER=$OUTDIR/initramfs.cpio ;;
  *) die "PEACH2_INITRD_COMPRESS must be none or gzip" ;;
esac

mkdir -p "$OUTDIR"
# One build at a time per output dir (the test harness and make may both call us).
exec 9>"$OUTDIR/.lock"
flock 9
STAGE=$OUTDIR/root
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,usr/lib/modules,usr/lib64,dev,proc,sys,tmp,run,root,selftests,etc}
ln -s usr/lib "$STAGE/lib"
ln -s usr/lib64 "$STAGE/lib64"
chmod 1777 "$STAGE/tmp"

say "staging in $STAGE"
# busybox and its applet links (relative paths like bin/sh, usr/bin/awk).
install -m 0755 "$BUSYBOX" "$STAGE/bin/busybox"
"$BUSYBOX" --list-full | while read -r app; do
  [ "$app" = bin/busybox ] && continue
  [ -e "$STAGE/$app" ] || [ -L "$STAGE/$app" ] || ln -s /bin/busybox "$STAGE/$app"
done
[ -L "$STAGE/bin/sh" ] || die "busybox provides no bin/sh applet"
# The busybox applets `init`/`linuxrc` would shadow nothing we use; /init is ours.
install -m 0755 "$INIT" "$STAGE/init"
install -m 0644 "$KO" "$STAGE/lib/modules/peach2.ko"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$STAGE/etc/passwd"
printf 'root:x:0:\n' >"$STAGE/etc/group"

# Real programs replace busybox applets of the same name.
rm -f "$STAGE/usr/bin/lspci"
install -m 0755 "$LSPCI" "$STAGE/usr/bin/lspci"

n_bin=0 n_lib=0 n_st=0
if [ -d "$UL/bin" ]; then
  for f in "$UL"/bin/*; do
    [ -f "$f" ] || continue
    rm -f "$STAGE/usr/bin/$(basename "$f")"
    install -m 0755 "$f" "$STAGE/usr/bin/"
    n_bin=$((n_bin + 1))
  done
fi
if [ -d "$UL/lib" ]; then
  # cp -a keeps the libtca.so -> libtca.so.1 symlinks.
  for f in "$UL"/lib/*.so*; do
    [ -e "$f" ] || continue
    cp -a "$f" "$STAGE/usr/lib/"
    n_lib=$((n_lib + 1))
  done
fi
if [ -d "$ST" ]; then
  for f in "$ST"/*; do
    [ -e "$f" ] || continue
    cp -a "$f" "$STAGE/selftests/"
    n_st=$((n_st + 1))
  done
fi
n_fw=0
if [ -d "$PEACH2_BUILD/firmware/images" ]; then
  mkdir -p "$STAGE/usr/lib/firmware/peach2"
  for f in "$PEACH2_BUILD"/firmware/images/*.bin; do
    [ -e "$f" ] || continue
    cp -a "$f" "$STAGE/usr/lib/firmware/peach2/"
    n_fw=$((n_fw + 1))
  done
fi
say "userlib: $n_bin programs, $n_lib libraries; selftests: $n_st entries; firmware: $n_fw images"

# Shared libraries of every dynamic ELF file in the tree, at their host paths.
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
copy_host_file() { # copy /abs/path into the stage at the same path, following symlinks
  local src=$1 dst=$STAGE$1
  [ -e "$dst" ] && return 0
  mkdir -p "$(dirname "$dst")"
  cp -L "$src" "$dst"
}
declare -A seen=()
missing=()
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  # ldd on a static binary or a module prints "not a dynamic executable" and fails.
  out=$(LD_LIBRARY_PATH="$UL/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f" 2>/dev/null) || continue
  while read -r line; do
    case $line in
      *"=> not found"*) missing+=("${f#"$STAGE"}: ${line%% *}") ; continue ;;
      *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
      /*) lib=${line%% (*} ;;
      *) continue ;;
    esac
    [ -n "${seen[$lib]:-}" ] && continue
    seen[$lib]=1
    case $lib in "$UL"/lib/*) continue ;; esac # already in /usr/lib
    copy_host_file "$lib"
  done <<<"$out"
done < <(find "$STAGE" -type f -print0)
[ ${#missing[@]} -eq 0 ] || die "unresolved shared libraries: ${missing[*]}"
say "copied ${#seen[@]} shared libraries (incl. the loader)"

# Rewrite the archive only when the staged tree changed.
hash=$( (cd "$STAGE" && find . -print0 | LC_ALL=C sort -z | \
          xargs -0 stat -c '%n %A %s' && \
          find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum && \
          find . -type l -print0 | LC_ALL=C sort -z | xargs -0 -r readlink) | \
        { cat; echo "compress=$COMPRESS"; } | sha256sum | cut -c1-16)
rm -f "$OTHER" "$OTHER.hash" # one initramfs only: the launcher boots whichever exists
if [ -f "$OUT" ] && [ "$(cat "$OUT.hash" 2>/dev/null)" = "$hash" ]; then
  say "unchanged: $OUT ($(du -h "$OUT" | cut -f1))"
  exit 0
fi
say "writing $OUT (compression: $COMPRESS)"
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | \
   cpio -o -H newc --owner=0:0 --reproducible --quiet) >"$OUT.cpio.tmp"
if [ "$COMPRESS" = gzip ]; then
  gzip -n -6 -c "$OUT.cpio.tmp" >"$OUT.tmp"
  rm -f "$OUT.cpio.tmp"
else
  mv "$OUT.cpio.tmp" "$OUT.tmp"
fi
mv -f "$OUT.tmp" "$OUT"
echo "$hash" >"$OUT.hash"
say "ready: $OUT ($(du -h "$OUT" | cut -f1); tree $(du -sh "$STAGE" | cut -f1))"
