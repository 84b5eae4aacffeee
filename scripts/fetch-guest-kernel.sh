#!/usr/bin/env bash
# Fetch the guest kernel: Debian's linux-image-$PEACH2_GUEST_KVER, vmlinuz only.
#
# Result (cached outside the checkout, keyed by kernel version):
#   $PEACH2_CACHE/guest/vmlinuz-$KVER      Debian's bzImage (XZ-compressed)
#   $PEACH2_CACHE/guest/vmlinux-$KVER      the same kernel decompressed: an ELF with a
#                                          PVH entry note. QEMU boots it directly
#                                          (-kernel vmlinux), skipping the XZ
#                                          decompressor, which under TCG costs ~4-5 s
#                                          of every boot. scripts/cluster.py prefers it.
#   $PEACH2_CACHE/guest/config-$KVER       its .config (handy for "is X built in?")
#   $PEACH2_CACHE/guest/modules-$KVER/     the few modules the Debian guest loads from its
#                                          initramfs (virtio PCI, block, net and console
#                                          (the launcher's copy channel), squashfs,
#                                          overlay: all =m in Debian's kernel) and
#                                          load-order, their insmod order (dependencies
#                                          first, read from each module's .modinfo)
# The .deb (~70 MB) is kept in $PEACH2_CACHE/dl. The busybox-only guest needs no module
# (serial, PCI, MSI-X, devtmpfs, initramfs gzip are built in; peach2.ko depends on
# nothing else).
# Idempotent: does nothing when vmlinuz, vmlinux and the modules are already there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KVER=$PEACH2_GUEST_KVER
PKG=linux-image-$KVER
GDIR=$PEACH2_CACHE/guest
DL=$PEACH2_CACHE/dl
OUT=$GDIR/vmlinuz-$KVER

ELF=$GDIR/vmlinux-$KVER
MODDIR=$GDIR/modules-$KVER
# The modules the guests load (by path inside the package); their dependencies must be in
# this list too (the script checks). Add one here when a guest needs another driver.
MODULES=(
  kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
  kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko
  kernel/drivers/virtio/virtio_pci.ko kernel/drivers/block/virtio_blk.ko
  kernel/fs/squashfs/squashfs.ko kernel/fs/overlayfs/overlay.ko
  kernel/net/core/failover.ko kernel/drivers/net/net_failover.ko kernel/drivers/net/virtio_net.ko
  kernel/drivers/char/virtio_console.ko
)

# vmlinuz -> vmlinux: decompress the XZ payload of the bzImage (like the kernel's
# scripts/extract-vmlinux) and check that it is an ELF with a PVH entry point.
make_vmlinux() {
  say "extracting vmlinux (PVH-bootable ELF) from $(basename "$OUT")"
  /usr/bin/python3 - "$OUT" "$ELF.tmp" <<'PY' || die "could not extract vmlinux from $OUT"
import lzma, struct, sys
src, dst = sys.argv[1], sys.argv[2]
img = open(src, "rb").read()
off = img.find(b"\xfd7zXZ\x00")
if off < 0:
    sys.exit("no XZ payload in %s" % src)
elf = lzma.LZMADecompressor().decompress(img[off:])
if elf[:4] != b"\x7fELF" or elf[4] != 2:
    sys.exit("payload is not a 64-bit ELF")
# PT_NOTE segments: look for the Xen note XEN_ELFNOTE_PHYS32_ENTRY (18), the PVH entry.
phoff, = struct.unpack_from("<Q", elf, 0x20)
phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
pvh = False
for k in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + k * phentsize)
    if p_type != 4:
        continue
    pos, end = p_offset, p_offset + p_filesz
    while pos + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
        name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
        if name == b"Xen" and ntype == 18:
            pvh = True
        pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
if not pvh:
    sys.exit("vmlinux has no PVH entry note (CONFIG_PVH): boot vmlinuz instead")
open(dst, "wb").write(elf)
PY
  mv -f "$ELF.tmp" "$ELF"
  say "ready: $ELF ($(du -h "$ELF" | cut -f1))"
}

# The package's modules -> $MODDIR/*.ko and $MODDIR/load-order (one file name a line).
modules_key() { printf '%s\n' "${MODULES[@]}" | sha256sum | cut -c1-16; }
extract_modules() {
  local deb=$1 tmp
  say "extracting ${#MODULES[@]} modules from $(basename "$deb")"
  tmp=$(mktemp -d "$GDIR/.modules.XXXXXX")
  dpkg-deb --fsys-tarfile "$deb" | \
    tar -x -C "$tmp" "${MODULES[@]/#/./lib/modules/$KVER/}" \
    || { rm -rf "$tmp"; die "could not extract the modules from $deb (see MODULES in $0)"; }
  mkdir -p "$tmp/out"
  /usr/bin/python3 - "$tmp/lib/modules/$KVER" "$tmp/out" "${MODULES[@]}" <<'PY' \
    || { rm -rf "$tmp"; die "module dependencies are not satisfied (see MODULES in $0)"; }
import os, re, shutil, sys
src, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
name = lambda p: os.path.basename(p)[:-3].replace("-", "_")
deps = {}
for p in paths:
    info = open(os.path.join(src, p), "rb").read()
    m = re.search(rb"(?:^|\x00)depends=([^\x00]*)\x00", info)
    deps[name(p)] = [d for d in (m.group(1).decode().split(",") if m else []) if d]
order, seen = [], set()
def visit(n, chain):
    if n in seen:
        return
    if n not in deps:
        sys.exit("module %s (needed by %s) is not in MODULES" % (n, " <- ".join(chain)))
    for d in deps[n]:
        visit(d, chain + [n])
    seen.add(n)
    order.append(n)
for p in paths:
    visit(name(p), [])
for p in paths:
    shutil.copy(os.path.join(src, p), out)
open(os.path.join(out, "load-order"), "w").write("".join(n + ".ko\n" for n in order))
PY
  modules_key >"$tmp/out/.key"
  rm -rf "$MODDIR"
  mv "$tmp/out" "$MODDIR"
  rm -rf "$tmp"
  say "ready: $MODDIR ($(wc -l <"$MODDIR/load-order") modules)"
}
find_deb() { find "$DL/" -maxdepth 1 -name "${PKG}_*.deb" | head -n1; }
fetch_deb() {
  local deb
  deb=$(find_deb)
  if [ -z "$deb" ]; then
    say "downloading $PKG (apt-get download, ~70 MB)"
    (cd "$DL" && apt-get download -q "$PKG") >&2 \
      || die "apt-get download $PKG failed (is the Debian mirror reachable? try: apt-get update)"
    deb=$(find_deb)
    [ -n "$deb" ] || die "apt-get download left no ${PKG}_*.deb in $DL"
  fi
  echo "$deb"
}
modules_ok() { [ "$(cat "$MODDIR/.key" 2>/dev/null)" = "$(modules_key)" ]; }

mkdir -p "$GDIR" "$DL"
if [ -s "$OUT" ]; then
  say "cached: $OUT"
  [ -s "$ELF" ] || make_vmlinux
  modules_ok || extract_modules "$(fetch_deb)"
  exit 0
fi

deb=$(fetch_deb)
say "using $(basename "$deb")"

# Extract only ./boot (a few MB) rather than the whole package (~400 MB of modules).
tmp=$(mktemp -d "$GDIR/.extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "extracting boot/ from the package"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./boot \
  || die "could not extract ./boot from $deb"
[ -s "$tmp/boot/vmlinuz-$KVER" ] || die "$deb has no boot/vmlinuz-$KVER"
if [ -f "$tmp/boot/config-$KVER" ]; then mv -f "$tmp/boot/config-$KVER" "$GDIR/config-$KVER"; fi
mv -f "$tmp/boot/vmlinuz-$KVER" "$OUT.tmp"
mv -f "$OUT.tmp" "$OUT"
say "ready: $OUT ($(du -h "$OUT" | cut -f1))"
make_vmlinux
modules_ok || extract_modules "$deb"
