#!/usr/bin/env bash
# Install everything the project needs from Debian packages (bookworm).
# Idempotent: does nothing when every package is already present.
set -euo pipefail

KVER=${PEACH2_GUEST_KVER:-6.1.0-56-amd64}

PKGS=(
  # QEMU 7.2 build (ENGINEERING-NOTES.md)
  build-essential ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev
  libslirp-dev libcap-ng-dev libattr1-dev libfdt-dev flex bison python3-venv
  dpkg-dev
  # firmware images QEMU needs at run time
  seabios ipxe-qemu qemu-system-data
  # guest: kernel headers for the module, busybox, pciutils for lspci in the guest,
  # squashfs-tools for the Debian root image (scripts/build-guest-root.py)
  "linux-headers-${KVER}" busybox-static pciutils cpio squashfs-tools
  # host tests
  cmake googletest libgtest-dev python3-pytest zlib1g-dev
  # ss: the host Verbs end-to-end test starts a client when its server listens
  iproute2
  # peach2-info (userlib/tools/info): libpci (lspci's library), JSON output
  libpci-dev nlohmann-json3-dev
  # TCA Verbs: the ABI headers it is built against, and Debian's programs it runs
  libibverbs-dev ibverbs-utils perftest
  # MPI test programs (userlib/mpi): built on the host against both of Debian's MPIs,
  # run in the guests with the same packages' runtime libraries
  libopenmpi-dev libmpich-dev
  # the compiler wrapper users build their own MPI programs with on the host (mpicc,
  # mpicc.openmpi; README "Your own program"): libopenmpi-dev does not pull it in, while
  # libmpich-dev brings MPICH's (mpicc.mpich, package mpich)
  openmpi-bin
  # benchmark charts (scripts/plot-bench.py, scripts/plot-model.py)
  python3-matplotlib
  # static checkers for driver/
  sparse
  # fuzzing (make fuzz): clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# QEMU's source comes from Debian's source packages: make sure a deb-src entry exists.
need_src=0
if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/ && \
   ! grep -qs "^deb-src" /etc/apt/sources.list; then
  need_src=1
fi

if [ ${#missing[@]} -eq 0 ] && [ $need_src -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if [ $need_src -eq 0 ]; then :; else
  echo "install-deps: adding a deb-src entry for bookworm"
  src=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
  if [ -n "$src" ]; then
    # Same archive as the first deb stanza, Types: deb-src
    awk 'BEGIN{RS="";ORS="\n\n"} NR==1{sub(/Types: deb/,"Types: deb-src"); print}' "$src" | \
      $SUDO tee /etc/apt/sources.list.d/peach2-deb-src.sources >/dev/null
  else
    grep -E "^deb " /etc/apt/sources.list | head -n1 | sed 's/^deb /deb-src /' | \
      $SUDO tee /etc/apt/sources.list.d/peach2-deb-src.list >/dev/null
  fi
fi

# Wait for another apt/dpkg run (e.g. a second checkout's set-up) instead of failing.
APT_WAIT=(-o DPkg::Lock::Timeout=600)
echo "install-deps: apt-get update"
$SUDO apt-get "${APT_WAIT[@]}" update -q
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "${APT_WAIT[@]}" install -y -q --no-install-recommends "${missing[@]}"
fi
echo "install-deps: done"
