"""What the benchmark scripts (demo.py --bench, bench-dma.py, bench-get.py) share:
where their CSV goes, copying it out of a guest, and checking the guests' kernels."""
import os

from cluster import build_dir


def bench_csv(name):
    """Host path of a benchmark CSV: <build>/bench/<name>."""
    return os.path.join(build_dir(), "bench", name)


def save_guest_csv(c, node, guest_path, host_path):
    """Copy a CSV a guest program wrote to the host. Its text, or None if unreadable."""
    rc, text = c.run(node, "cat %s" % guest_path)
    if rc != 0:
        return None
    os.makedirs(os.path.dirname(host_path), exist_ok=True)
    with open(host_path, "w", encoding="utf-8") as f:
        f.write(text)
    print("\nCSV written to %s" % host_path)
    return text


def kernels_clean(c, nodes):
    """Print every guest kernel problem (BUG, Oops, WARNING...) of the nodes; True if none."""
    ok = True
    for i in nodes:
        problems = c.kernel_problems(i)
        if problems:
            ok = False
            print("node%d kernel problems:\n  %s" % (i, "\n  ".join(problems[:10])))
    return ok
