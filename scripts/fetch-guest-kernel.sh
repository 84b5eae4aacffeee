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
# The .deb (~70 MB) is kept in $PEACH2_CACHE/dl. The image's modules are not
# extracted: the guest needs none (serial, PCI, MSI-X, devtmpfs, initramfs gzip
# are built into Debian's kernel; peach2.ko depends on nothing else).
# Idempotent: does nothing when vmlinuz is already there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KVER=$PEACH2_GUEST_KVER
PKG=linux-image-$KVER
GDIR=$PEACH2_CACHE/guest
DL=$PEACH2_CACHE/dl
OUT=$GDIR/vmlinuz-$KVER

ELF=$GDIR/vmlinux-$KVER

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

if [ -s "$OUT" ]; then
  say "cached: $OUT"
  [ -s "$ELF" ] || make_vmlinux
  exit 0
fi
mkdir -p "$GDIR" "$DL"

deb=$(find "$DL/" -maxdepth 1 -name "${PKG}_*.deb" | head -n1)
if [ -z "$deb" ]; then
  say "downloading $PKG (apt-get download, ~70 MB)"
  (cd "$DL" && apt-get download -q "$PKG") \
    || die "apt-get download $PKG failed (is the Debian mirror reachable? try: apt-get update)"
  deb=$(find "$DL/" -maxdepth 1 -name "${PKG}_*.deb" | head -n1)
  [ -n "$deb" ] || die "apt-get download left no ${PKG}_*.deb in $DL"
fi
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
