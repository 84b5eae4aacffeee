#!/usr/bin/python3
"""Build the Debian root of the guests: a read-only squashfs made from Debian packages.

    scripts/build-guest-root.py            # build if needed, link build/guest/debian-root.*
    scripts/build-guest-root.py --key      # print the cache key and exit

The package list is scripts/guest/packages.txt (the one place to add a package). Its
dependency closure (Recommends off, resolved by apt against an empty dpkg status, so
nothing from the build host leaks in) is downloaded with `apt-get download`, unpacked
into a tree with `dpkg-deb --fsys-tarfile | tar` (merged /usr kept), configured by hand
(no maintainer script runs: see configure_root), and packed as an uncompressed squashfs:

    $PEACH2_CACHE/guest/debian-root-<key>.squashfs   the image, shared by every node
    $PEACH2_CACHE/guest/debian-root-<key>.files      every path in it (for library checks)
    $PEACH2_CACHE/guest/debian-root-<key>.packages   name=version of every package
    $PEACH2_CACHE/guest/debs/*.deb                   downloaded packages (kept)

<key> hashes the package list and this script, so editing either rebuilds; a warm run
only refreshes the links $PEACH2_BUILD/guest/debian-root.{squashfs,files,packages}.
After a build, only the KEEP_IMAGES newest images stay in the cache (about 190 MiB each;
other checkouts may use other keys, and rebuild theirs if it was pruned).
The guest boots it with the initramfs of scripts/build-initramfs.sh, which carries the
project's own files (driver, libraries, tools) as a layer above it.
"""
import argparse
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import build_dir, cache_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = os.path.join(HERE, "guest", "packages.txt")
ARCH_LIB = "usr/lib/x86_64-linux-gnu"
# Left out of the image (not needed in a guest; about 12 MiB).
EXCLUDE = ("./usr/share/doc/*", "./usr/share/man/*", "./usr/share/info/*",
           "./usr/share/locale/*", "./usr/share/lintian/*", "./usr/share/bug/*")
# The guest user for programs that refuse to run as root, and the group that may open
# /dev/peach2-* (the guest's init sets the device node's group).
GUEST_USER = ("user", 1000)
TCA_GROUP = ("tca", 900)
REMOTE_EXEC = "/usr/bin/peach2-rsh"  # from the project layer (scripts/guest/peach2-rsh.c)
KEEP_IMAGES = 3


def say(msg):
    sys.stderr.write("[build-guest-root] %s\n" % msg)
    sys.stderr.flush()


def die(msg):
    say("error: " + msg)
    sys.exit(1)


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        die("%s failed (rc %d):\n%s%s" % (" ".join(argv[:3]), r.returncode, r.stdout[-2000:],
                                          r.stderr[-2000:]))
    return r.stdout


def read_packages(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            names += line.split("#", 1)[0].split()
    if not names:
        die("%s lists no packages" % path)
    return names


def cache_key(path):
    h = hashlib.sha256()
    for p in (path, os.path.abspath(__file__)):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------
# 1. Resolve: the closure of the list, as apt would install it on an empty system.

def resolve(names, work):
    empty = os.path.join(work, "empty-status")
    open(empty, "w").close()
    r = subprocess.run(["apt-get", "-s", "-q", "-o", "Dir::State::status=" + empty,
                        "-o", "APT::Install-Recommends=false", "-o", "Debug::NoLocking=1",
                        "install"] + names, capture_output=True, text=True)
    if r.returncode != 0:
        die("apt cannot resolve the guest packages (is the package list current? "
            "try: apt-get update):\n" + r.stdout[-1500:] + r.stderr[-1500:])
    pkgs = re.findall(r"^Inst (\S+) \((\S+) ", r.stdout, re.M)
    if not pkgs:
        die("apt resolved no packages:\n" + r.stdout[-1500:])
    return sorted(pkgs)


# ---------------------------------------------------------------------------
# 2. Download the .debs (cached by file name, which holds name, version and arch).

def deb_name(name, version):
    return "%s_%s_amd64.deb" % (name.split(":")[0], version.replace(":", "%3a"))


def find_deb(debs, name, version):
    for arch in ("amd64", "all"):
        p = os.path.join(debs, "%s_%s_%s.deb" % (name.split(":")[0],
                                                 version.replace(":", "%3a"), arch))
        if os.path.exists(p):
            return p
    return None


def download(pkgs, debs):
    os.makedirs(debs, exist_ok=True)
    missing = [(n, v) for n, v in pkgs if not find_deb(debs, n, v)]
    if missing:
        say("downloading %d of %d packages into %s" % (len(missing), len(pkgs), debs))
        t0 = time.monotonic()
        for k in range(0, len(missing), 20):  # in batches, for progress
            batch = missing[k:k + 20]
            run(["apt-get", "download", "-q"] + ["%s=%s" % nv for nv in batch], cwd=debs)
            say("  %d/%d downloaded (%.0f s)" % (min(k + 20, len(missing)), len(missing),
                                                 time.monotonic() - t0))
    files = []
    for n, v in pkgs:
        p = find_deb(debs, n, v)
        if not p:
            die("apt-get download left no %s (%s) in %s" % (n, v, debs))
        files.append(p)
    return files


# ---------------------------------------------------------------------------
# 3. Unpack into a tree with Debian's merged /usr (bin, sbin, lib, lib64 -> usr/...).

def unpack(files, root):
    for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", ARCH_LIB):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        os.symlink("usr/" + d, os.path.join(root, d))
    status = []
    t0 = time.monotonic()
    for k, deb in enumerate(files, 1):
        # --keep-directory-symlink: a package's ./bin/x lands in usr/bin (dpkg-deb -x
        # would replace the bin -> usr/bin link by a directory).
        deb_tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "-C", root, "--keep-directory-symlink",
                              "--no-same-owner", "--delay-directory-restore"]
                             + ["--exclude=%s" % e for e in EXCLUDE],
                             stdin=deb_tar.stdout, capture_output=True, text=True)
        deb_tar.stdout.close()
        if deb_tar.wait() != 0 or tar.returncode != 0:
            die("cannot unpack %s: %s" % (deb, tar.stderr[-800:]))
        ctrl = run(["dpkg-deb", "-f", deb])
        status.append(ctrl.rstrip("\n").replace("\nVersion:", "\nStatus: install ok installed"
                                                "\nVersion:", 1))
        if k % 25 == 0 or k == len(files):
            say("  unpacked %d/%d packages (%.0f s)" % (k, len(files), time.monotonic() - t0))
    # dpkg's database, so that `dpkg -l` in a guest says what is there.
    dpkg = os.path.join(root, "var/lib/dpkg")
    os.makedirs(os.path.join(dpkg, "info"), exist_ok=True)
    with open(os.path.join(dpkg, "status"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(status) + "\n")


# ---------------------------------------------------------------------------
# 4. What the maintainer scripts would have done, and the guest's own settings.

def alternatives(files):
    """update-alternatives --install groups of every postinst: {name: (prio, [(link,
    path)])} keeping the highest priority per name (as dpkg's auto mode does)."""
    best = {}
    for deb in files:
        r = subprocess.run(["dpkg-deb", "-I", deb, "postinst"], capture_output=True, text=True)
        if r.returncode != 0 or "update-alternatives" not in r.stdout:
            continue
        # Join continuation lines; comment lines inside a continued command end it.
        text = re.sub(r"\\\n", " ", r.stdout)
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("update-alternatives") or "--install" not in line:
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            i = words.index("--install")
            if len(words) < i + 5:
                continue
            link, name, path, prio = words[i + 1:i + 5]
            group = [(link, path)]
            rest = words[i + 5:]
            while len(rest) >= 4 and rest[0] == "--slave":
                group.append((rest[1], rest[3]))
                rest = rest[4:]
            try:
                prio = int(prio)
            except ValueError:
                continue
            if name not in best or prio > best[name][0]:
                best[name] = (prio, group)
    return best


def link_alternatives(root, best):
    made = []
    for name, (prio, group) in sorted(best.items()):
        for link, path in group:
            if not os.path.lexists(root + path):
                continue  # e.g. mpicc without the -dev package
            dst = root + link
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst):
                os.unlink(dst)
            os.symlink(path, dst)
            made.append("%s -> %s" % (link, path))
    return made


def write(root, path, text, mode=0o644):
    p = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(p, mode)


def append(root, path, text):
    p = os.path.join(root, path.lstrip("/"))
    with open(p, "a", encoding="utf-8") as f:
        f.write(text)


def configure_root(root, files):
    made = link_alternatives(root, alternatives(files))
    say("alternatives: " + ", ".join(m.split(" -> ")[0] for m in made))
    # /bin/sh is dash's (created by its postinst on Debian).
    sh = os.path.join(root, "usr/bin/sh")
    if not os.path.lexists(sh):
        os.symlink("dash", sh)
    # busybox applets for whatever no package provides (mount, insmod, vi, ...).
    bb = os.path.join(root, "usr/bin/busybox")
    if not os.path.exists(bb):
        die("busybox is not in the image: keep busybox-static in %s" % PACKAGES)
    out = run([bb, "--list-full"])  # Debian's busybox runs on the (Debian) build host
    applets = 0
    for app in out.split():
        dst = os.path.join(root, "usr", app.replace("usr/", "", 1))
        base = os.path.basename(app)
        if any(os.path.lexists(os.path.join(root, d, base))
               for d in ("usr/bin", "usr/sbin")) or base in ("init", "linuxrc"):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.symlink("/usr/bin/busybox", dst)
        applets += 1
    say("busybox: %d applet links" % applets)

    user, uid = GUEST_USER
    grp, gid = TCA_GROUP
    write(root, "/etc/passwd",
          "root:x:0:0:root:/root:/bin/bash\n"
          "%s:x:%d:%d:PEACH2 guest user:/home/%s:/bin/bash\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" % (user, uid, uid, user))
    write(root, "/etc/group",
          "root:x:0:\ntty:x:5:\n%s:x:%d:%s\n%s:x:%d:\nnogroup:x:65534:\n"
          % (grp, gid, user, user, uid))
    write(root, "/etc/shadow", "root:*:19000:0:99999:7:::\n%s:*:19000:0:99999:7:::\n"
          "nobody:*:19000:0:99999:7:::\n" % user, 0o640)
    write(root, "/etc/nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\n"
          "hosts: files\nnetworks: files\nprotocols: files\nservices: files\n")
    write(root, "/etc/resolv.conf", "")  # no DNS: names are in /etc/hosts (written at boot)
    write(root, "/etc/hosts", "127.0.0.1\tlocalhost\n")
    for d, mode in (("root", 0o700), ("home/" + user, 0o755), ("tmp", 0o1777),
                    ("var/tmp", 0o1777), ("run", 0o755), ("dev", 0o755), ("proc", 0o555),
                    ("sys", 0o555)):
        p = os.path.join(root, d)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, mode)
    # Open MPI launches remote daemons through the project's remote-exec agent (there is
    # no sshd); MPICH gets the same from /etc/peach2/environment (Hydra has no config
    # file), which comes with the project layer (scripts/guest/environment).
    # Messages and one-sided operations go through UCX, which /etc/ucx/ucx.conf
    # (scripts/guest/ucx.conf) keeps on the cards: no tcp BTL to fall back to, and no
    # openib BTL (it would open the card a second time, beside UCX). Ranks go to every
    # node in turn (/etc/peach2/hostfile, written by the guest's init at boot).
    conf = "/etc/openmpi/openmpi-mca-params.conf"
    if os.path.exists(root + conf):
        append(root, conf, "\n# PEACH2 guests (scripts/build-guest-root.py): no sshd; "
               "remote daemons start through the management network's agent.\n"
               "plm_rsh_agent = %s\n"
               "# MPI traffic over the PEACH2 cards (UCX over TCA Verbs, "
               "/etc/ucx/ucx.conf), never TCP\n"
               "pml = ucx\nosc = ucx\nbtl = self,vader\n"
               "orte_default_hostfile = /etc/peach2/hostfile\n" % REMOTE_EXEC)
    run(["ldconfig", "-r", root])


# ---------------------------------------------------------------------------
# 5. Pack.

def pack(root, out):
    if not shutil.which("mksquashfs"):
        die("mksquashfs not found: apt-get install squashfs-tools (scripts/install-deps.sh)")
    say("packing %s (squashfs)" % os.path.basename(out))
    t0 = time.monotonic()
    # -all-root: every file root-owned (the tree was unpacked without root's ownership).
    # Uncompressed (-noI -noD -noF -noX): decompressing in a TCG guest is slow; with zstd
    # the step from switch_root to ready took about twice as long (docs/notes.md,
    # "Issue 9"). The image is read lazily and shared through the host's page cache.
    r = subprocess.run(["mksquashfs", root, out, "-noI", "-noD", "-noF", "-noX",
                        "-all-root", "-noappend", "-no-progress", "-quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die("mksquashfs failed:\n" + r.stderr[-2000:])
    say("packed in %.0f s" % (time.monotonic() - t0))


def link(target, name):
    tmp = name + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default=PACKAGES, help="package list (default %(default)s)")
    ap.add_argument("--key", action="store_true", help="print the cache key and exit")
    ap.add_argument("--force", action="store_true", help="rebuild even if cached")
    a = ap.parse_args()
    key = cache_key(a.packages)
    if a.key:
        print(key)
        return 0
    gdir = os.path.join(cache_dir(), "guest")
    os.makedirs(gdir, exist_ok=True)
    base = os.path.join(gdir, "debian-root-%s" % key)
    outs = {ext: "%s.%s" % (base, ext) for ext in ("squashfs", "files", "packages")}
    # Several checkouts share the cache: one build at a time.
    with open(os.path.join(gdir, ".debian-root.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if a.force or not all(os.path.exists(p) for p in outs.values()):
            build(a.packages, gdir, key, outs)
        else:
            say("cached: %s (%s)" % (outs["squashfs"], human(os.path.getsize(outs["squashfs"]))))
    bdir = os.path.join(build_dir(), "guest")
    os.makedirs(bdir, exist_ok=True)
    for ext, p in outs.items():
        link(p, os.path.join(bdir, "debian-root.%s" % ext))
    return 0


def human(n):
    return "%.1f MiB" % (n / 1048576)


def prune(gdir):
    """Remove all but the KEEP_IMAGES newest images (and their lists) from the cache."""
    images = sorted((p for p in os.listdir(gdir)
                     if p.startswith("debian-root-") and p.endswith(".squashfs")),
                    key=lambda p: os.path.getmtime(os.path.join(gdir, p)), reverse=True)
    for old in images[KEEP_IMAGES:]:
        base = os.path.join(gdir, old[:-len(".squashfs")])
        for ext in ("squashfs", "files", "packages"):
            try:
                os.unlink("%s.%s" % (base, ext))
            except FileNotFoundError:
                pass
        say("pruned %s from the cache" % old)


def build(packages, gdir, key, outs):
    t0 = time.monotonic()
    names = read_packages(packages)
    work = os.path.join(gdir, ".build-%s" % key)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        say("resolving %d listed packages (Recommends off)" % len(names))
        pkgs = resolve(names, work)
        say("%d packages in the closure" % len(pkgs))
        files = download(pkgs, os.path.join(gdir, "debs"))
        root = os.path.join(work, "root")
        say("unpacking into %s" % root)
        unpack(files, root)
        configure_root(root, files)
        size = run(["du", "-sm", root]).split()[0]
        say("tree: %s MiB" % size)
        tmp = outs["squashfs"] + ".tmp"
        pack(root, tmp)
        listing = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, capture_output=True,
                                 text=True, check=True).stdout
        with open(outs["files"] + ".tmp", "w", encoding="utf-8") as f:
            f.write("".join(sorted(line[1:] + "\n" for line in listing.splitlines())))
        with open(outs["packages"] + ".tmp", "w", encoding="utf-8") as f:
            f.write("".join("%s=%s\n" % nv for nv in pkgs))
        for p in (outs["files"], outs["packages"], outs["squashfs"]):  # the image last
            os.replace(p + ".tmp", p)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    prune(gdir)
    say("ready: %s (%s, %d packages, %.0f s)" % (outs["squashfs"],
                                                  human(os.path.getsize(outs["squashfs"])),
                                                  len(pkgs), time.monotonic() - t0))


if __name__ == "__main__":
    sys.exit(main())
