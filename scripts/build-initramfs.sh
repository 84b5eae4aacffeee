#!/usr/bin/env bash
# Build the guest initramfs: $PEACH2_BUILD/guest/initramfs.cpio.gz (default), or
# $PEACH2_BUILD/guest/initramfs.cpio with PEACH2_INITRD_COMPRESS=none. Exactly one of the
# two exists afterwards; scripts/cluster.py boots whichever is there.
#
# One initramfs serves both guests:
#  - the Debian guest (default): the launcher attaches the Debian root image
#    (scripts/build-guest-root.py) and /init loads the modules, mounts that image under a
#    tmpfs overlay, copies the project layer into it and switch_roots;
#  - the busybox guest: /init goes on in the initramfs itself.
#
# The project layer: $PEACH2_BUILD/guest/layer/ holds, at their paths in the guest,
# exactly the files the build adds to every guest (listed in /etc/peach2/layer.list);
# in the Debian guest they are laid over Debian's files (same name: ours wins). This is the
# place where the project's programs and libraries go into the guests:
#   /usr/sbin/peach2-init                scripts/guest/init (PID 1; /init links to it)
#   /usr/lib/modules/peach2.ko           driver/peach2.ko (required: `make -C driver`)
#   /usr/bin/*                           $PEACH2_BUILD/userlib/bin/*     (if present)
#   /usr/lib/x86_64-linux-gnu/*.so*      $PEACH2_BUILD/userlib/lib/*.so* (if present): a
#                                        library named like a Debian one replaces it for
#                                        every program (e.g. a drop-in libibverbs.so.1)
#   /selftests/*                         $PEACH2_BUILD/selftests/*       (if present)
#   /usr/lib/firmware/peach2/*.bin       $PEACH2_BUILD/firmware/images/* (if present)
#   /usr/bin/peach2-rsh (setuid root)    scripts/guest/peach2-rsh.c, the remote-exec agent
#   /usr/bin/peach2-receive              scripts/guest/peach2-receive, the copy channel's guest end
#   /etc/peach2/environment              scripts/guest/environment
#   /etc/profile.d/peach2.sh             scripts/guest/profile.sh
#   /etc/mdev.conf                       scripts/guest/mdev.conf (the card's node: group tca)
#   /etc/ucx/ucx.conf                    scripts/guest/ucx.conf (UCX over the cards, no tcp)
# plus any shared library a layer program needs that the Debian root lacks (copied from
# the build host, with a note). New kinds of files: add them in stage_layer below.
#
# The rest of the initramfs (not copied into the Debian root):
#   busybox + applet links               from Debian's busybox-static
#   /usr/lib/modules/<kver>/*.ko         virtio, squashfs, overlay, virtio_net and their
#                                        load-order (scripts/fetch-guest-kernel.sh)
#   /usr/bin/lspci                       Debian's pciutils (the Debian root has its own)
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
GUEST_SRC=$PEACH2_TOP/scripts/guest
INIT=$GUEST_SRC/init
KMODS=$PEACH2_CACHE/guest/modules-$PEACH2_GUEST_KVER
ROOT_FILES=$PEACH2_BUILD/guest/debian-root.files
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
command -v cc >/dev/null || die "cc not found: apt-get install build-essential (scripts/install-deps.sh)"
[ -f "$KMODS/load-order" ] || die "guest kernel modules missing in $KMODS: run scripts/fetch-guest-kernel.sh"
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
LAYER=$OUTDIR/layer
rm -rf "$STAGE" "$LAYER"

# --- the project layer --------------------------------------------------------------
stage_layer() {
  local L=$LAYER f
  mkdir -p "$L"/usr/{bin,sbin,lib/modules,lib/x86_64-linux-gnu} "$L/selftests" "$L/etc/peach2" \
           "$L/etc/profile.d"
  install -m 0755 "$INIT" "$L/usr/sbin/peach2-init"
  install -m 0644 "$KO" "$L/usr/lib/modules/peach2.ko"
  install -m 0755 "$GUEST_SRC/peach2-receive" "$L/usr/bin/peach2-receive"
  install -m 0644 "$GUEST_SRC/environment" "$L/etc/peach2/environment"
  install -m 0644 "$GUEST_SRC/profile.sh" "$L/etc/profile.d/peach2.sh"
  install -m 0644 "$GUEST_SRC/mdev.conf" "$L/etc/mdev.conf"
  install -D -m 0644 "$GUEST_SRC/ucx.conf" "$L/etc/ucx/ucx.conf"
  # The remote-exec agent: setuid root (the server trusts privileged source ports only).
  cc -O2 -Wall -Wextra -Werror -o "$OUTDIR/peach2-rsh" "$GUEST_SRC/peach2-rsh.c" \
    || die "cannot build scripts/guest/peach2-rsh.c"
  install -m 4755 "$OUTDIR/peach2-rsh" "$L/usr/bin/peach2-rsh"
  n_bin=0 n_lib=0 n_st=0 n_fw=0
  if [ -d "$UL/bin" ]; then
    for f in "$UL"/bin/*; do
      [ -f "$f" ] || continue
      install -m 0755 "$f" "$L/usr/bin/"
      n_bin=$((n_bin + 1))
    done
  fi
  if [ -d "$UL/lib" ]; then
    # cp -a keeps the libtca.so -> libtca.so.1 symlinks.
    for f in "$UL"/lib/*.so*; do
      [ -e "$f" ] || continue
      cp -a "$f" "$L/usr/lib/x86_64-linux-gnu/"
      n_lib=$((n_lib + 1))
    done
  fi
  if [ -d "$ST" ]; then
    for f in "$ST"/*; do
      [ -e "$f" ] || continue
      cp -a "$f" "$L/selftests/"
      n_st=$((n_st + 1))
    done
  fi
  if [ -d "$PEACH2_BUILD/firmware/images" ]; then
    mkdir -p "$L/usr/lib/firmware/peach2"
    for f in "$PEACH2_BUILD"/firmware/images/*.bin; do
      [ -e "$f" ] || continue
      cp -a "$f" "$L/usr/lib/firmware/peach2/"
      n_fw=$((n_fw + 1))
    done
  fi
  say "layer: $n_bin programs, $n_lib libraries; selftests: $n_st entries; firmware: $n_fw images"
}
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# Libraries the layer's programs need that the Debian root lacks come from the build host.
complete_layer_for_debian() {
  if [ ! -f "$ROOT_FILES" ]; then
    say "no $ROOT_FILES (scripts/build-guest-root.py): skipping the library check of the layer"
    return 0
  fi
  declare -A have=() need=()
  local f so lib added=0
  while IFS= read -r f; do have[${f##*/}]=1; done < <(grep -E '^/usr/lib/(x86_64-linux-gnu/)?[^/]+$' "$ROOT_FILES")
  while IFS= read -r f; do have[${f##*/}]=1; done < <(find "$LAYER" -name '*.so*')
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    while read -r so; do need[$so]=1; done < <(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  done < <(find "$LAYER" -type f -print0)
  for so in "${!need[@]}"; do
    [ -n "${have[$so]:-}" ] && continue
    lib=$(/sbin/ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }')
    [ -n "$lib" ] || die "$so, needed by the layer, is neither in the Debian root nor on this host"
    install -D -m 0644 "$(readlink -f "$lib")" "$LAYER$lib"
    say "note: $so is not in the Debian root: copied from this host (add its package to scripts/guest/packages.txt)"
    added=$((added + 1))
  done
  return 0
}

say "staging in $OUTDIR"
stage_layer
complete_layer_for_debian

# --- the initramfs --------------------------------------------------------------------
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,usr/lib/modules,usr/lib64,dev,proc,sys,tmp,run,root,etc,mnt}
ln -s usr/lib "$STAGE/lib"
ln -s usr/lib64 "$STAGE/lib64"
chmod 1777 "$STAGE/tmp"
# busybox and its applet links (relative paths like bin/sh, usr/bin/awk).
install -m 0755 "$BUSYBOX" "$STAGE/bin/busybox"
"$BUSYBOX" --list-full | while read -r app; do
  [ "$app" = bin/busybox ] && continue
  [ -e "$STAGE/$app" ] || [ -L "$STAGE/$app" ] || ln -s /bin/busybox "$STAGE/$app"
done
[ -L "$STAGE/bin/sh" ] || die "busybox provides no bin/sh applet"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$STAGE/etc/passwd"
printf 'root:x:0:\n' >"$STAGE/etc/group"
mkdir -p "$STAGE/usr/lib/modules/$PEACH2_GUEST_KVER"
cp "$KMODS"/*.ko "$KMODS/load-order" "$STAGE/usr/lib/modules/$PEACH2_GUEST_KVER/"
# Real programs replace busybox applets of the same name.
rm -f "$STAGE/usr/bin/lspci"
install -m 0755 "$LSPCI" "$STAGE/usr/bin/lspci"
# The layer, at its guest paths (they replace busybox applets of the same name), and its
# list, which the Debian guest's /init copies into the new root.
(cd "$LAYER" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort) >"$OUTDIR/layer.list"
(cd "$LAYER" && tar -cf - .) | (cd "$STAGE" && tar -xpf - --keep-directory-symlink)
cp "$OUTDIR/layer.list" "$STAGE/etc/peach2/layer.list"
ln -sf usr/sbin/peach2-init "$STAGE/init"

# Shared libraries of every dynamic ELF file in the tree, at their host paths.
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
  # The MPI programs (userlib/mpi: <name>.openmpi, <name>.mpich) run in the Debian guest
  # only, on its MPI runtime; the busybox guest gets none of their ~40 MiB of libraries.
  case $f in *.openmpi | *.mpich) continue ;; esac
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
