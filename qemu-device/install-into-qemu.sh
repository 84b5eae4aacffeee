#!/usr/bin/env bash
# Copy the peach2 device into a QEMU 7.2 source tree and apply our QEMU
# patches (idempotent).
#   hw/misc/peach2.c                 the QEMU glue
#   hw/misc/peach2/                  the C++ core and the shared hardware header
# and hook it into hw/misc/{Kconfig,meson.build,trace-events}.
# Files are only rewritten when their content changed, so ninja rebuilds
# just what changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
src=${1:?usage: install-into-qemu.sh QEMU_SOURCE_DIR}
misc=$src/hw/misc
[ -f "$misc/meson.build" ] || { echo "install-into-qemu: $src is not a QEMU source tree" >&2; exit 1; }

put() { # put SRC DST: copy if different
  mkdir -p "$(dirname "$2")"
  cmp -s "$1" "$2" || cp "$1" "$2"
}
put "$here/qemu/peach2.c" "$misc/peach2.c"
for f in "$here"/core/src/*.cc "$here"/core/src/*.h; do
  put "$f" "$misc/peach2/$(basename "$f")"
done
for f in "$here"/core/include/*.h; do
  put "$f" "$misc/peach2/include/$(basename "$f")"
done
# The firmware image parser: the card validates images with it (and reads
# its cabling from the topology, to check HELLOs against it).
for f in fw_image.cc fw_image.h topology.cc topology.h; do
  put "$top/firmware/lib/$f" "$misc/peach2/$f"
done
# The card trace's format and recorder (model/trace): the card records with them.
for f in trace_format.h trace_format.cc trace_recorder.h trace_recorder.cc; do
  put "$top/model/trace/$f" "$misc/peach2/$f"
done
for h in peach2_hw.h peach2_dma_rules.h; do
  put "$top/include/peach2/$h" "$misc/peach2/include/peach2/$h"
done

# Patches to QEMU itself (qemu-device/patches/*.patch), each applied once.
for p in "$here"/patches/*.patch; do
  [ -e "$p" ] || continue
  if patch -d "$src" -p1 -R --dry-run -s -f <"$p" >/dev/null 2>&1; then
    continue # already applied
  fi
  patch -d "$src" -p1 -N -s <"$p" || { echo "install-into-qemu: $(basename "$p") does not apply to $src" >&2; exit 1; }
  echo "install-into-qemu: applied $(basename "$p")" >&2
done

# Hooks: appended once, between markers, replaced when they change.
hook() { # hook FILE SNIPPET
  local file=$1 snippet=$2 tmp
  tmp=$(mktemp)
  awk '/^# >>> peach2/{skip=1} !skip{print} /^# <<< peach2/{skip=0}' "$file" >"$tmp"
  { printf '# >>> peach2\n'; cat "$snippet"; printf '# <<< peach2\n'; } >>"$tmp"
  if cmp -s "$tmp" "$file"; then rm -f "$tmp"; else mv "$tmp" "$file"; fi
}
hook "$misc/Kconfig" "$here/qemu/Kconfig.in"
hook "$misc/meson.build" "$here/qemu/meson.build.in"
hook "$misc/trace-events" "$here/qemu/trace-events"
