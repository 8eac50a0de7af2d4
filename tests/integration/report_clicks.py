"""The doctor's reports as a reader meets them: report.xml's lines per
testcase, and report.html in headless Chromium (Debian's chromium package)
with a click on every cell, each click dispatched to the page's own handler
and the details panel read back after it."""

import html
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Appended after the page's own script: clicks every cell in turn and writes
# what the details panel shows after each click into <pre id="clicks">.
CLICK_ALL = """<script>
(function () {
  var out = {};
  Array.prototype.forEach.call(document.querySelectorAll('td.cell[data-layer]'), function (td) {
    td.click();
    var panel = document.getElementById('details');
    var sel = document.querySelector('td.cell.selected');
    out[td.id] = {text: panel.textContent, selected: sel ? sel.id : null, hash: location.hash,
                  evidence: Array.prototype.map.call(panel.querySelectorAll('ul.evidence li'),
                                                     function (li) { return li.textContent; })};
  });
  var pre = document.createElement('pre');
  pre.id = 'clicks';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"""


def click_every_cell(report_html, workdir):
    """{cell id: {text, selected, hash, evidence}} after a click on each cell
    of ``report_html``, from one headless Chromium run."""
    page = workdir / "clicks.html"
    text = report_html.read_text()
    assert text.count("</body>") == 1
    page.write_text(text.replace("</body>", CLICK_ALL))
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
           "--disable-background-networking", "--disable-component-update", "--disable-extensions", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
           "--user-data-dir=%s" % (workdir / "chromium-profile"), "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env=dict(os.environ, HOME=str(workdir)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r'<pre id="clicks">(.*?)</pre>', proc.stdout, re.S)
    assert m, proc.stdout[-2000:]
    return json.loads(html.unescape(m.group(1)))


def junit_lines(report_xml):
    """{(host, layer): (kind, lines)}: each testcase's failure, skipped or
    system-out text as lines (kind '' when it has none)."""
    out = {}
    for suite in ET.parse(report_xml).getroot():
        for case in suite.findall("testcase"):
            layer = int(case.get("name").split()[1])
            for kind in ("failure", "system-out", "skipped"):
                node = case.find(kind)
                if node is not None:
                    out[(suite.get("name"), layer)] = (kind, (node.text or "").split("\n") if node.text else [])
                    break
            else:
                out[(suite.get("name"), layer)] = ("", [])
    return out
