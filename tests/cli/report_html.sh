#!/usr/bin/env bash
# report.html in headless Chromium: `eval --html` with 10 controllers and `demo`'s report.html,
# rendered from the embedded report JSON with no server (file://). Checks: the trade-off plot
# and the windows curve drew, with axis titles; the table has every column of the CLI's table
# and the same step tokens and offset-averaged violation rates; every controller has its own
# colour and the markers are distinct up to their 8; no network; demo's page links power.svg.
# With FLEXWATT_SHOT_DIR set, saves report.png there (docs/ keeps the one checked by eye).
# Usage: report_html.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
source "$(dirname "$0")/lib/browser.sh"
ctl=uncontrolled,static,pid,threshold,zeus,lookahead,pid:knob=gen_concurrency,pid:kp=0.5,ki=0.1
ctl=$ctl,threshold:knob=gen_concurrency,static:knob=gen_concurrency
# --wide: the CLI table with every column (the page's), one line per row.
"$bin" eval "$src/scenarios/grpo-7b-a100.yaml" --controllers "$ctl" --seeds 2 --duration-s 60 \
  --wide --html "$tmp/eval.html" >"$tmp/eval.txt" 2>"$tmp/eval.err"
check "eval --html ran" test $? -eq 0
check "eval --html wrote the page with the report JSON embedded" \
  grep -q '<script id="report" type="application/json">{' "$tmp/eval.html"
check "the page needs no network" test "$(grep -Ec 'https?://' "$tmp/eval.html")" -eq 0
check "the page loads no other file (only a demo's power.svg, beside it)" \
  test "$(grep -oE '(src|href)=[^ >]*' "$tmp/eval.html" | grep -vc '="power.svg"')" -eq 0
dump_dom "file://$tmp/eval.html" "$tmp/dom.html"
st=$(status_of "$tmp/dom.html")
check "the report drew (status '$st')" grep -Eq '^ok points=[1-9][0-9]* report controllers=10$' <<<"$st"
check "the trade-off plot has its axis titles" grep -q \
  '<canvas id="trade"[^>]*aria-label="completed-step tokens per episode against 30 s budget-window violations, mean over window offsets' \
  "$tmp/dom.html"
check "the windows curve has its axis titles" grep -q \
  '<canvas id="windows"[^>]*aria-label="windows over budget (%) against judging window length' "$tmp/dom.html"
check "no power.svg section for eval" test "$(perl -0pe 's/<script.*?<\/script>//gs' "$tmp/dom.html" | grep -c 'power.svg')" -eq 0
# The table against the CLI's: every column of its header, the same step tokens and viol win %.
python3 - "$tmp/eval.txt" "$tmp/dom.html" <<'PY' >"$tmp/compare.txt" 2>&1
import html.parser, re, sys
cli = open(sys.argv[1]).read().splitlines()
at = next(i for i, l in enumerate(cli) if l.startswith("controller") and "step tokens" in l)
head = re.split(r"  +", cli[at].strip())
rows = {}
for l in cli[at + 1:]:
    if not l.strip():
        break
    cells = re.split(r"  +", l.strip())
    rows[cells[0]] = dict(zip(head, cells))

class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.t = None; self.cell = None; self.row = []; self.rows = []; self.legend = []
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "table": self.t = a.get("id")
        if self.t == "rep-table" and tag in ("td", "th"): self.cell = ""
        if self.t == "rep-table" and tag == "tr": self.row = []
        if tag == "span" and "data-marker" in a: self.legend.append((a["data-color"], a["data-marker"]))
    def handle_endtag(self, tag):
        if tag == "table": self.t = None
        if self.cell is not None and tag in ("td", "th"): self.row.append(self.cell.strip()); self.cell = None
        if self.t == "rep-table" and tag == "tr": self.rows.append(self.row)
    def handle_data(self, d):
        if self.cell is not None: self.cell += d
p = P(); p.feed(open(sys.argv[2]).read())
bad = 0
hhead = [c.replace("\u2009", "") for c in p.rows[0]]
for c in head:
    if c not in hhead:
        print("column missing from the page:", c); bad += 1
for r in p.rows[1:]:
    cells = dict(zip(hhead, [c.replace("\u2009", "").replace("–", "-") for c in r]))
    want = rows.get(cells["controller"])
    if want is None:
        print("row not in the CLI table:", cells["controller"]); bad += 1; continue
    for c in ("step tokens", "tokens/MWh", "viol win %", "slide win %", "steps viol %", "tok/ref"):
        if c in want and cells.get(c) != want[c]:
            print(f"{cells['controller']} {c}: page {cells.get(c)!r}, CLI {want[c]!r}"); bad += 1
n = len(p.rows) - 1
# Two legends (trade-off, windows) of m entries each: rows with the same figures share one.
m = len(p.legend) // 2
legend = p.legend[:m]
colors = {c for c, _ in legend}; markers = {m_ for _, m_ in legend}
print(f"rows={n} cli_rows={len(rows)} legend={m} colours={len(colors)} markers={len(markers)}")
if n != len(rows): bad += 1
if not 0 < m <= n: print("legend entries", m, "for", n, "rows"); bad += 1
if len(colors) != m: print("colours repeat"); bad += 1
if len(markers) != min(m, 8): print("markers repeat"); bad += 1
sys.exit(1 if bad else 0)
PY
rc=$?
check "the table matches the CLI's columns and figures ($(tail -1 "$tmp/compare.txt"))" test "$rc" -eq 0
grep -v '^rows=' "$tmp/compare.txt" | head -5

(cd "$src" && "$bin" demo --seeds 1 --duration-s 60 --out "$tmp/demo" --json >"$tmp/demo.json" \
  2>"$tmp/demo.err")
check "demo wrote report.html (path on stderr)" grep -q "demo: wrote $tmp/demo/report.html" "$tmp/demo.err"
check "demo's stdout is report.json alone" test "$(jq '.controllers | length > 0' "$tmp/demo.json")" = true
dump_dom "file://$tmp/demo/report.html" "$tmp/demo_dom.html"
check "demo's report.html renders" grep -Eq '^ok points=[1-9][0-9]* report' <<<"$(status_of "$tmp/demo_dom.html")"
check "demo's report links power.svg beside it" \
  grep -q '<a href="power.svg">power.svg</a>' "$tmp/demo_dom.html"
check "power.svg is there" test -s "$tmp/demo/power.svg"
if [ -n "${FLEXWATT_SHOT_DIR:-}" ]; then
  screenshot "file://$tmp/demo/report.html" "$FLEXWATT_SHOT_DIR/report.png" 1280,2300
  check "the screenshot was written" test -s "$FLEXWATT_SHOT_DIR/report.png"
fi
finish report_html
