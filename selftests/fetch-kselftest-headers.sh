#!/usr/bin/env bash
# Fetch the kselftest harness headers (kselftest.h, kselftest_harness.h) of
# the guest kernel's series from Debian's linux-source-6.1 package into
# $PEACH2_CACHE/kselftest/. Does nothing when they are already there.
#
# The .deb holds usr/src/linux-source-6.1.tar.xz (the whole kernel tree);
# we stream the .deb's data archive, pull out only that tarball, and then
# extract only the two headers from it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/lib.sh
. "$here/../scripts/lib.sh"

pkg=${PEACH2_KSRC_PKG:-linux-source-6.1}
dest=$PEACH2_CACHE/kselftest
dl=$PEACH2_CACHE/dl
headers=(kselftest.h kselftest_harness.h)

have_all() {
  local h
  for h in "${headers[@]}"; do
    [ -s "$dest/$h" ] || return 1
  done
}

if have_all; then
  say "kselftest headers present in $dest"
  exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found (need Debian's $pkg)"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"

mkdir -p "$dest" "$dl"
deb=$(ls -t "$dl"/"${pkg}"_*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
  say "downloading $pkg (about 140 MB) into $dl"
  # As root, apt would drop to _apt, which cannot write into our cache.
  apt_opts=(-q)
  [ "$(id -u)" -ne 0 ] || apt_opts+=(-o APT::Sandbox::User=root)
  (cd "$dl" && apt-get download "${apt_opts[@]}" "$pkg") ||
    die "apt-get download $pkg failed (run apt-get update first?)"
  deb=$(ls -t "$dl"/"${pkg}"_*.deb 2>/dev/null | head -n1 || true)
  [ -n "$deb" ] || die "apt-get download left no $pkg .deb in $dl"
else
  say "using cached $(basename "$deb")"
fi

tmp=$(mktemp -d "$dl/kselftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

say "extracting the kernel source tarball from $(basename "$deb")"
dpkg-deb --fsys-tarfile "$deb" |
  tar -x -C "$tmp" --wildcards --no-anchored 'linux-source-*.tar.*'
src_tar=$(find "$tmp" -name 'linux-source-*.tar.*' -type f | head -n1)
[ -n "$src_tar" ] || die "no linux-source tarball inside $(basename "$deb")"

say "extracting ${headers[*]} from $(basename "$src_tar")"
pats=()
for h in "${headers[@]}"; do
  pats+=("*/tools/testing/selftests/$h")
done
tar -x -C "$tmp" -f "$src_tar" --wildcards "${pats[@]}"

for h in "${headers[@]}"; do
  f=$(find "$tmp" -path "*/tools/testing/selftests/$h" -type f | head -n1)
  [ -n "$f" ] || die "$h not found in $(basename "$src_tar")"
  install -m 0644 "$f" "$dest/$h.tmp"
  mv -f "$dest/$h.tmp" "$dest/$h"
done
have_all || die "headers missing after extraction"
say "kselftest headers installed in $dest"
