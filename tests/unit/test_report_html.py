"""report.html in a real headless Chromium (Debian's chromium package): the
page loads from a file with the network shut off, the screenshot shows the
grid (one solid red or green block per failing or passing cell), the DOM has
a cell per host and layer with its status and cause, and a link to a cell
opens its details (what a click does)."""

import html.parser
import os
import re
import shutil
import struct
import subprocess
import zlib

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, doctor_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/setup-host.sh installs Debian's chromium package)"), pytest.mark.layers("all")]

# The grid's colours (doctor_report.CSS --pass / --fail); nothing else on the
# page is painted in exactly these.
GREEN = (0x2E, 0x9E, 0x44)
RED = (0xD3, 0x2F, 0x2F)
# A grid cell is 44 x 24 px less its glyph; the legend swatches are 12 x 12.
# Blocks of at least this many pixels are cells.
CELL_MIN_AREA = 300


def sample_rack():
    """8 GPU nodes, 2 leaf switches, a few failing layers (node02 at layer 6,
    node05 at 15, node07 at 9, leaf2's PFC), one warning, Kubernetes layers
    skipped; and a rail-optimised cabling plan."""
    fails = {"node02": 6, "node05": 15, "node07": 9}
    report, cabling = {}, []
    for i in range(1, 9):
        host = "node%02d" % i
        results = []
        for n in range(1, 16):
            if n == 7:
                continue
            if fails.get(host) == n:
                results.append(doctor.result(n, "fail", "%s broken at layer %d" % (host, n),
                                             ["evidence <%d> & more" % n], "fix layer %d" % n))
            elif host == "node03" and n == 4:
                results.append(doctor.result(n, "warn", "firmware change pending a reboot", ["NUM_OF_VFS 16 -> 8"],
                                             "reboot"))
            elif 10 <= n <= 14:
                results.append(doctor.result(n, "skipped", "no Kubernetes on this rack"))
            else:
                results.append(doctor.result(n, "pass", "layer %d healthy" % n, ["ok"]))
        verdict, rows = doctor.verdict(results)
        report[host] = {"verdict": verdict, "layers": rows}
        cabling.append({"node": host, "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "switch": "leaf1",
                        "port": "swp%d" % i})
        cabling.append({"node": host, "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0", "switch": "leaf2",
                        "port": "Ethernet%d" % i})
    for sw, status in (("leaf1", "pass"), ("leaf2", "fail")):
        verdict, rows = doctor.verdict([doctor.result(7, status, "PFC off on Ethernet3" if status == "fail" else "ok",
                                                      ["Ethernet3: pfc none"], "site.yml --tags layer07")])
        report[sw] = {"verdict": verdict, "layers": rows}
    return report, cabling


def chromium(*args, timeout=120):
    """Run headless Chromium with the network shut off: every host name
    fails to resolve and every request goes to a dead proxy."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--no-first-run", "--no-default-browser-check",
           "--disable-background-networking", "--disable-component-update", "--disable-extensions",
           "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, HOME=os.environ.get("TMPDIR", "/tmp")))


# --------------------------------------------------------------------------
# PNG (stdlib only)
# --------------------------------------------------------------------------

def read_png(path):
    """-> (width, height, rows of RGB tuples) for 8-bit RGB/RGBA PNGs."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if ftype == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 0xFF
        elif ftype == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 0xFF
        elif ftype == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif ftype == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def blocks(png, colour):
    """Connected blocks of pixels of exactly ``colour``: [(area, x0, y0, x1, y1)].
    Runs of the colour in each row are joined to the runs they touch in the
    row above (union-find)."""
    width, height, bpp, rows = png
    target = bytes(colour)
    parent = {}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    runs, prev_runs, all_runs = [], [], []
    for y, row in enumerate(rows):
        runs = []
        x = 0
        while x < width:
            if row[x * bpp:x * bpp + 3] == target:
                start = x
                while x < width and row[x * bpp:x * bpp + 3] == target:
                    x += 1
                rid = len(all_runs)
                all_runs.append((y, start, x))
                parent[rid] = rid
                for pid in prev_runs:
                    _, ps, pe = all_runs[pid]
                    if ps < x and start < pe:
                        ra, rb = find(rid), find(pid)
                        if ra != rb:
                            parent[ra] = rb
                runs.append(rid)
            else:
                x += 1
        prev_runs = runs
    out = {}
    for rid, (y, s, e) in enumerate(all_runs):
        root = find(rid)
        a, x0, y0, x1, y1 = out.get(root, (0, s, y, e, y))
        out[root] = (a + e - s, min(x0, s), min(y0, y), max(x1, e), max(y1, y))
    return sorted(out.values(), key=lambda b: (b[2], b[1]))


# --------------------------------------------------------------------------
# DOM
# --------------------------------------------------------------------------

class Cells(html.parser.HTMLParser):
    """Every <td class="cell ..."> with its attributes, and the details panel's text."""

    def __init__(self):
        super().__init__()
        self.cells = []
        self.details = []
        self._in_details = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "cell" in (a.get("class") or "").split():
            self.cells.append(a)
        if tag == "aside" and a.get("id") == "details":
            self._in_details = 1
        elif self._in_details:
            self._in_details += 1

    def handle_endtag(self, tag):
        if self._in_details:
            self._in_details -= 1

    def handle_data(self, data):
        if self._in_details:
            self.details.append(data)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    report, cabling = sample_rack()
    d = tmp_path_factory.mktemp("report")
    path = d / "report.html"
    path.write_text(doctor_report.html_report(report, ["leaf1", "leaf2"], cabling, "rack A", "generated in a test"),
                    encoding="utf-8")
    return report, path


def test_html_is_self_contained(page):
    _, path = page
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z]+:)?//""", text, re.I)
    assert "@import" not in text and not re.search(r"url\(\s*['\"]?(?:[a-z]+:)?//", text, re.I)
    assert "<style>" in text and "<script>" in text


def test_screenshot_shows_the_grid(page, tmp_path):
    report, path = page
    shot = tmp_path / "grid.png"
    proc = chromium("--user-data-dir=%s" % (tmp_path / "profile"), "--screenshot=%s" % shot,
                    "--window-size=1400,900", path.as_uri())
    assert shot.exists(), proc.stderr[-2000:]
    png = read_png(shot)
    assert png[:2] == (1400, 900)
    statuses = [r["status"] for h in report.values() for r in h["layers"]]
    want = {"fail": statuses.count("fail"), "pass": statuses.count("pass")}
    assert want["fail"] >= 3 and want["pass"] >= 30
    for status, colour in (("fail", RED), ("pass", GREEN)):
        found = blocks(png, colour)
        cells = [b for b in found if b[0] >= CELL_MIN_AREA]
        assert len(cells) == want[status], (status, found)
        # the legend's swatch of the same colour is there too, and small
        assert [b for b in found if b[0] < CELL_MIN_AREA], (status, found)
        sizes = {(b[3] - b[1], b[4] - b[2]) for b in cells}
        assert len(sizes) == 1, sizes        # every cell the same size: a grid
    red = [b for b in blocks(png, RED) if b[0] >= CELL_MIN_AREA]
    green = [b for b in blocks(png, GREEN) if b[0] >= CELL_MIN_AREA]
    # the failing cells sit in the columns and rows of the passing ones
    cols = {b[1] for b in green}
    assert all(b[1] in cols for b in red if b[2] < max(g[2] for g in green)), (red, cols)


def test_dom_has_every_host_and_layer(page, tmp_path):
    report, path = page
    proc = chromium("--user-data-dir=%s" % (tmp_path / "profile"), "--dump-dom", path.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    p = Cells()
    p.feed(proc.stdout)
    by_id = {c["id"]: c for c in p.cells if c.get("id")}
    for host, entry in report.items():
        for r in entry["layers"]:
            cell = by_id["cell-%s-%d" % (host, r["layer"])]
            assert r["status"] in cell["class"].split()
            assert cell["data-host"] == host and cell["data-layer"] == str(r["layer"])
            assert r["reason"] in cell["title"] and host in cell["title"]
    n_results = sum(len(h["layers"]) for h in report.values())
    assert len(by_id) == n_results
    # every host has a row with a cell per layer column, checked or not
    per_host = {}
    for c in p.cells:
        host = c.get("data-host") or re.match(r"^(\S+) ", c["title"]).group(1)
        per_host[host] = per_host.get(host, 0) + 1
    assert set(per_host) == set(report) and len(set(per_host.values())) == 1
    assert "Hover a cell" in "".join(p.details)


def test_cell_link_opens_its_details(page, tmp_path):
    """A click on a cell sets #cell-<host>-<layer>; opening that address
    fills the details panel with the reason, the evidence and the fix."""
    report, path = page
    host = "node07"
    v = report[host]["verdict"]
    r = [x for x in report[host]["layers"] if x["layer"] == v["layer"]][0]
    proc = chromium("--user-data-dir=%s" % (tmp_path / "profile"), "--dump-dom",
                    path.as_uri() + "#cell-%s-%d" % (host, v["layer"]))
    assert proc.returncode == 0, proc.stderr[-2000:]
    p = Cells()
    p.feed(proc.stdout)
    text = " ".join(p.details)
    assert host in text and r["reason"] in text and r["remediation"] in text
    assert r["evidence"][0] in text
    selected = [c for c in p.cells if "selected" in c["class"].split()]
    assert [c["id"] for c in selected] == ["cell-%s-%d" % (host, v["layer"])]
