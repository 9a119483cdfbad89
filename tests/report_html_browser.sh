#!/bin/sh
# The results page in a real browser. Builds the fixture database of test_report_html,
# writes the page with `dawnrun report --format html -o`, opens it in headless Chromium
# and checks the rendered DOM (tests/report_html_dom.py): every experiment's name and
# k/n line, one <svg> per plot, the params table, one <details> per run. Then at a phone
# width (390 px, a frame in a probe page: Chromium's headless window is at least 500 px
# wide) the page must not overflow horizontally, and a control copy whose tables do not
# scroll must, so that the probe is known to see an overflow. Screenshots at a desktop
# and a phone width are left in OUT_DIR with the page.
#
# Usage: sh report_html_browser.sh DAWNRUN TEST_REPORT_HTML OUT_DIR
# Exit 77 (skipped) when Chromium or python3 is not installed.
set -eu
dawnrun=$1
maker=$2
out=$3
here=$(cd "$(dirname "$0")" && pwd)

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "skipped: chromium is not installed (make test installs it as root:" \
         "scripts/install-deps.sh chromium)"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipped: python3 is not installed"
    exit 77
fi

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
profile=$(mktemp -d /tmp/dawnrun-test-browser-XXXXXX)
trap 'rm -rf "$profile"' EXIT

# As root Chromium needs --no-sandbox; its own diagnostics go to chromium.log.
chrome() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --force-device-scale-factor=1 --no-first-run --user-data-dir="$profile" \
        --virtual-time-budget=5000 "$@" 2>>"$out/chromium.log"
}

"$maker" --make-db "$out/fixture.db" >/dev/null
"$dawnrun" report --db "$out/fixture.db" --format html -o "$out/report.html"
echo "page: $out/report.html"

# the DOM as the browser built it, at a desktop width
chrome --window-size=1280,900 --dump-dom "file://$out/report.html" >"$out/dom.html"
python3 "$here/report_html_dom.py" dom "$out/dom.html" "$out/fixture.db"

# A copy of the page that reports its widths to the probe page framing it. The
# control copy also lets every table overflow its scrolling box.
probe_copy() {   # DEST EXTRA_STYLE
    python3 - "$out/report.html" "$1" "$2" <<'EOF'
import sys
src, dest, style = sys.argv[1], sys.argv[2], sys.argv[3]
page = open(src, encoding="utf-8").read()
probe = ("<script>parent.postMessage(JSON.stringify({scrollWidth: "
         "document.documentElement.scrollWidth, innerWidth: innerWidth}), '*');</script>")
if style:
    page = page.replace("</head>", "<style>" + style + "</style></head>", 1)
page = page.replace("</body>", probe + "</body>", 1)
open(dest, "w", encoding="utf-8").write(page)
EOF
}
probe_frame() {   # DEST FRAMED_FILE
    cat >"$1" <<EOF
<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe src="$2" style="width:390px;height:2400px;border:0;display:block"></iframe>
<pre id="probe"></pre>
<script>addEventListener('message', function (e) {
  document.getElementById('probe').textContent = e.data; });</script>
</body></html>
EOF
}
probe_copy "$out/phone-page.html" ""
probe_copy "$out/phone-control.html" ".scroll{overflow-x:visible!important}"
probe_frame "$out/phone.html" phone-page.html
probe_frame "$out/phone-control-frame.html" phone-control.html
chrome --window-size=500,900 --dump-dom "file://$out/phone.html" >"$out/phone-dom.html"
python3 "$here/report_html_dom.py" probe "$out/phone-dom.html" 390 0
chrome --window-size=500,900 --dump-dom "file://$out/phone-control-frame.html" \
    >"$out/phone-control-dom.html"
python3 "$here/report_html_dom.py" probe "$out/phone-control-dom.html" 390 1

# screenshots: the page at 1280 px, and the phone frame (390 px in a 500 px window)
chrome --window-size=1280,2000 --screenshot="$out/report-desktop.png" \
    "file://$out/report.html" >/dev/null
python3 "$here/report_html_dom.py" png "$out/report-desktop.png" 1280
chrome --window-size=500,2400 --screenshot="$out/report-phone.png" \
    "file://$out/phone.html" >/dev/null
python3 "$here/report_html_dom.py" png "$out/report-phone.png" 500
echo "screenshots: $out/report-desktop.png $out/report-phone.png"
