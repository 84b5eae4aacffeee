"""Host-only: scripts/plot-bench.py turns a `tca_bench get` CSV into a well-formed SVG."""

import os
import subprocess
import xml.etree.ElementTree as ET

from peach2_testlib import REPO

CSV = """test,size,count,min_us,median_us,p99_us,mb_per_s
put_pio,8,500,167.3,229.9,1255.6,0.03
dma_put_stream,1048576,256,,,,1252.92
get,4,500,183.0,280.9,798.2,0.01
get,4096,500,167.5,295.2,696.1,13.88
get,1048576,64,623.9,762.7,1189.0,1374.76
cas,8,500,202.5,322.1,1714.9,0.02
"""
NS = "{http://www.w3.org/2000/svg}"


def test_plot_has_a_line_per_series_a_dot_per_single_test_and_the_streams(tmp_path):
    src, dst = tmp_path / "get.csv", tmp_path / "get.svg"
    src.write_text(CSV)
    r = subprocess.run([os.path.join(REPO, "scripts", "plot-bench.py"), str(src), str(dst)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    root = ET.parse(dst).getroot()
    lines = root.findall(NS + "polyline")
    assert len(lines) == 2                      # get: median and p99
    assert len(lines[0].get("points").split()) == 3
    texts = " | ".join(t.text or "" for t in root.iter(NS + "text"))
    assert "put_pio 8 B: 230 µs" in texts and "cas 8 B: 322 µs" in texts, texts
    assert "dma_put_stream 1 MiB: 1252.92 MB/s" in texts, texts


def test_missing_csv_is_a_clear_error(tmp_path):
    r = subprocess.run([os.path.join(REPO, "scripts", "plot-bench.py"), str(tmp_path / "none.csv")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 1 and "run scripts/bench-get.py first" in r.stdout
