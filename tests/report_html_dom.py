#!/usr/bin/env python3
"""Checks on what headless Chromium made of the results page, for
tests/report_html_browser.sh:

  report_html_dom.py dom DOM.html DB       the rendered DOM against the database: every
                                           experiment's name and its "k/n runs reach" line
                                           with the hit rate's interval,
                                           one <svg> (the plot) with its lines and the strip
                                           of every done run's final accuracy with the
                                           target and k/n reaching it, the note on
                                           multiplicity, the params table, one <details>
                                           per run
  report_html_dom.py probe DOM.html WIDTH OVERFLOW
                                           the widths a probe page framing the report at
                                           WIDTH px recorded: with OVERFLOW 0 the report
                                           must fit (scrollWidth <= innerWidth = WIDTH),
                                           with 1 it must not (the check's own control)
  report_html_dom.py png FILE WIDTH        FILE is a PNG image WIDTH px wide

Exits 1 with a message on the first check that fails."""
import html.parser
import json
import re
import sqlite3
import struct
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.content = [], []   # content: text and child nodes, in order

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def all_text(self):
        return "".join(c if isinstance(c, str) else c.all_text() for c in self.content)

    def find_all(self, tag=None, cls=None):
        out = []
        for c in self.children:
            if (tag is None or c.tag == tag) and (cls is None or cls in c.classes()):
                out.append(c)
            out.extend(c.find_all(tag, cls))
        return out


class TreeBuilder(html.parser.HTMLParser):
    """A DOM serialised by the browser is well formed: a stack of open elements is enough
    (each element keeps its text and children in document order)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        self.cur.content.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        self.cur.content.append(node)

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.content.append(data)


def fail(msg):
    print("report_html_dom: FAIL: " + msg)
    sys.exit(1)


def parse(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    b = TreeBuilder()
    b.feed(text)
    return b.root, text


def check_strip(plot, dom_path, db_path):
    """The strip of final accuracies next to the curves: per experiment (by id order) one
    point per done run at its final test accuracy, the target across its row, and the
    count of runs at or above the target."""
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    exps = list(db.execute("SELECT id, target_accuracy FROM experiments ORDER BY id"))
    finals = {i: sorted(r[0] for r in db.execute(
        "SELECT final_test_acc FROM runs WHERE experiment_id = ? AND status = 'done' "
        "AND final_test_acc IS NOT NULL", (x,))) for i, (x, _) in enumerate(exps)}
    db.close()
    panels = [g for g in plot.find_all("g", "panel") if g.attrs.get("id") == "panel-final"]
    if len(panels) != 1:
        fail("%d final-accuracy strips in the plot, expected one" % len(panels))
    strips = panels[0].find_all("g", "strip")
    if len(strips) != len(exps):
        fail("%d strip rows for %d experiments" % (len(strips), len(exps)))
    for i, (row, (_, target)) in enumerate(zip(strips, exps)):
        if row.attrs.get("data-experiment") != str(i):
            fail("strip row %d is for experiment %r" % (i, row.attrs.get("data-experiment")))
        got = sorted(float(c.attrs["data-acc"]) for c in row.find_all("circle", "final"))
        if len(got) != len(finals[i]) or any(abs(a - b) > 1e-12
                                             for a, b in zip(got, finals[i])):
            fail("strip row %d shows %r, the database has %r" % (i, got, finals[i]))
        if target is not None:
            reach = sum(a >= target for a in finals[i])
            want = "%d/%d" % (reach, len(finals[i]))
            if row.attrs.get("data-reach") != want:
                fail("strip row %d says %r reach the target, expected %s" %
                     (i, row.attrs.get("data-reach"), want))
            if len(row.find_all("line", "strip-target")) != 1:
                fail("strip row %d has no target line" % i)
            if want not in row.all_text():
                fail("strip row %d does not print %s" % (i, want))
    print("report_html_dom: the strip shows %d final accuracies" %
          sum(len(v) for v in finals.values()))


def check_dom(dom_path, db_path):
    root, text = parse(dom_path)
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    names = [r[0] for r in db.execute("SELECT name FROM experiments ORDER BY id")]
    n_runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    db.close()
    if not names:
        fail("the fixture database has no experiments")
    if root.find_all("script"):
        fail("the page holds a <script>")

    sentences = root.find_all("li", "sentence")
    if len(sentences) != len(names):
        fail("%d sentence lines for %d experiments" % (len(sentences), len(names)))
    for name, li in zip(names, sentences):
        strong = li.find_all("strong")
        if not strong or strong[0].all_text() != name:
            fail("sentence line %r does not name experiment %r" % (li.all_text(), name))
        rest = li.all_text()[len(name):]
        pct = r"\d+(\.\d+)?"
        if not re.match(r"^: \d+/\d+ runs reach %s %% \(%s %%, 95 %% CI %s–%s %%\)"
                        % (pct, pct, pct, pct), rest):
            fail("no k/n line for %r: %r" % (name, rest))

    summary = [t for t in root.find_all("table", "summary")]
    if len(summary) != 1:
        fail("%d summary tables" % len(summary))
    heads = [th.all_text() for th in summary[0].find_all("th", "experiment")]
    want = ["#%d %s" % (i + 1, n) for i, n in enumerate(names)]
    if heads != want:
        fail("summary columns %r, expected %r" % (heads, want))

    svgs = root.find_all("svg")
    plots = [s for s in svgs if s.parent is not None and "plot" in s.parent.classes()]
    if len(svgs) != 1 or len(plots) != 1:
        fail("%d <svg> elements (%d in the plot figure), expected one per plot" %
             (len(svgs), len(plots)))
    if not plots[0].find_all("polyline", "run"):
        fail("the plot has no run lines")
    check_strip(plots[0], dom_path, db_path)
    notes = [p for p in root.find_all("p", "note") if p.attrs.get("id") == "p-note"]
    if len(names) > 1 and (len(notes) != 1 or "multiplicity" not in notes[0].all_text()):
        fail("no single note that the p-values are not corrected for multiplicity")

    params = root.find_all("table", "params")
    if len(params) != 1:
        fail("%d params tables" % len(params))
    rows = params[0].find_all("tr")
    if len(rows) < 2:
        fail("the params table has no param rows")
    pheads = [th.all_text() for th in params[0].find_all("th", "experiment")]
    if pheads != want:
        fail("params columns %r, expected %r" % (pheads, want))

    details = root.find_all("details", "run")
    if len(details) != n_runs:
        fail("%d run <details> for %d runs" % (len(details), n_runs))
    print("report_html_dom: dom ok: %d experiments, %d runs, one plot, %d param rows" %
          (len(names), n_runs, len(rows) - 1))


def check_probe(dom_path, width, overflow):
    root, _ = parse(dom_path)
    pre = [p for p in root.find_all("pre") if p.attrs.get("id") == "probe"]
    if not pre or not pre[0].all_text().strip():
        fail("the probe page recorded nothing (did the framed page load?)")
    m = json.loads(pre[0].all_text())
    sw, iw = m["scrollWidth"], m["innerWidth"]
    if iw != width:
        fail("the framed page is %d px wide, expected %d" % (iw, width))
    if not overflow and sw > iw:
        fail("the page overflows horizontally at %d px: scrollWidth %d" % (iw, sw))
    if overflow and sw <= iw:
        fail("the control page (tables not scrolling) did not overflow at %d px "
             "(scrollWidth %d): the probe cannot see an overflow" % (iw, sw))
    print("report_html_dom: probe ok at %d px: scrollWidth %d (%s)" %
          (iw, sw, "control overflows" if overflow else "fits"))


def check_png(path, width):
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        fail("%s is not a PNG image" % path)
    w, h = struct.unpack(">II", head[16:24])
    if w != width or h < 100:
        fail("%s is %dx%d, expected %d px wide" % (path, w, h, width))
    print("report_html_dom: %s: %dx%d" % (path, w, h))


def main(argv):
    if len(argv) == 4 and argv[1] == "dom":
        check_dom(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == "probe":
        check_probe(argv[2], int(argv[3]), argv[4] == "1")
    elif len(argv) == 4 and argv[1] == "png":
        check_png(argv[2], int(argv[3]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
