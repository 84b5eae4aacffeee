"""Host-only: scripts/plot-bench.py draws the CSVs of `make bench` as PNG and SVG charts,
with the papers' figures as reference lines."""

import os
import subprocess
import xml.etree.ElementTree as ET

from peach2_testlib import REPO

PLOT = os.path.join(REPO, "scripts", "plot-bench.py")
HEADER = "test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified\n"
CSVS = {
    "pio_pingpong.csv": HEADER + """latency,pio,4,2000,71.0,118.0,257.0,0.03,2010
latency,pio,64,2000,68.0,120.0,311.0,0.53,2010
latency,pio,4096,2000,493.0,756.0,1274.0,5.42,2010
""",
    "dma.csv": HEADER + """latency,card,4,200,100.0,140.0,300.0,0.03,205
latency,card,4096,200,120.0,180.0,320.0,22.76,205
latency,host,4,200,110.0,141.0,310.0,0.03,205
latency,host,4096,200,111.0,139.0,330.0,29.47,205
stream,card,1048576,128,,,,906.00,128
stream,card,8388608,16,,,,842.00,16
latency,pio,4,200,,,,,205
""",
    "dma_local.csv": HEADER + "local,card,8388608,32,,,,2800.00,1\n",
    "get.csv": HEADER + """put_pio,pio,8,500,167.3,229.9,1255.6,0.03,505
dma_put_stream,host,1048576,64,,,,1252.92,64
get,,4,500,183.0,280.9,798.2,0.01,2
get,,4096,500,167.5,295.2,696.1,13.88,2
get,,1048576,64,623.9,762.7,1189.0,1374.76,2
get_stream,,1048576,64,,,,1602.50,4
cas,,8,500,202.5,322.1,1714.9,0.02,505
""",
}
NS = "{http://www.w3.org/2000/svg}"


def _run(*args):
    return subprocess.run([PLOT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def _texts(svg):
    return " | ".join(t.text or "" for t in ET.parse(svg).getroot().iter(NS + "text"))


def test_every_bench_csv_becomes_a_png_and_an_svg_chart(tmp_path):
    for name, text in CSVS.items():
        (tmp_path / name).write_text(text)
    r = _run("--dir", str(tmp_path))
    assert r.returncode == 0, r.stdout
    for chart in ("pio", "dma", "get"):
        png, svg = tmp_path / (chart + ".png"), tmp_path / (chart + ".svg")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", chart
        assert svg.stat().st_size > 1000, chart
    assert not (tmp_path / "crossover.png").exists()  # no CSV, no chart
    # Series, single-size points and the papers' figures are labelled.
    pio = _texts(tmp_path / "pio.svg")
    assert "latency pio median" in pio and "latency pio p99" in pio, pio
    assert "paper 004: PIO min latency 0.9 µs" in pio, pio
    dma = _texts(tmp_path / "dma.svg")
    assert "paper 000: DMA min latency, on-card descriptors 2.0 µs" in dma, dma
    assert "paper 000: DMA min latency, host descriptors 2.2 µs" in dma, dma
    assert "paper 004: DMA between nodes, max 3.5 GB/s" in dma, dma
    assert "local card, 8 MiB: 2800" in dma, dma          # dma_local.csv in the same chart
    assert "latency pio" not in dma, dma                  # the pong side's empty row
    get = _texts(tmp_path / "get.svg")
    assert "put_pio pio, 8 B: 229.9" in get and "cas, 8 B: 322.1" in get, get
    assert "get median" in get and "paper 000: RDMA Read min latency 6.5 µs" in get, get
    assert "dma_put_stream host, 1 MiB: 1253" in get, get


def test_explicit_csvs_make_one_chart_beside_the_first(tmp_path):
    src = tmp_path / "mine.csv"
    src.write_text(CSVS["get.csv"])
    r = _run(str(src))
    assert r.returncode == 0, r.stdout
    assert (tmp_path / "mine.png").exists() and (tmp_path / "mine.svg").exists()


def test_missing_input_is_a_clear_error(tmp_path):
    r = _run(str(tmp_path / "none.csv"))
    assert r.returncode == 1 and "none.csv not found" in r.stdout
    r = _run("--dir", str(tmp_path))
    assert r.returncode == 1 and "no benchmark CSV" in r.stdout and "make bench" in r.stdout
    (tmp_path / "empty.csv").write_text(HEADER + "latency,pio,4,200,,,,,205\n")
    r = _run(str(tmp_path / "empty.csv"))
    assert r.returncode == 1 and "no measured rows" in r.stdout
