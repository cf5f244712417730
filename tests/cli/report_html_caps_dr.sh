#!/usr/bin/env bash
# The caps and dr HTML reports (`caps --html`, `dr replay --html`) in headless Chromium from
# file:// (no server): the page drew (its #status), the trade-off plot has its axis titles,
# the tables have the CLI table's columns and the same figures row by row, every arm or job
# has its own colour, and the page needs no network. With FLEXWATT_SHOT_DIR set, saves
# report-caps.png and report-dr.png there (docs/ keeps the ones checked by eye).
# Usage: report_html_caps_dr.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
source "$(dirname "$0")/lib/browser.sh"
command -v python3 >/dev/null || need_tool python3

"$bin" caps "$src/scenarios/caps-pipeline-imbalance-a100x8.yaml" --seeds 2 --quick \
  --set duration_s=120 --html "$tmp/caps.html" >"$tmp/caps.txt" 2>"$tmp/caps.err"
check "caps --html ran" test $? -eq 0
"$bin" dr replay "$src/scenarios/dr/caiso-reenactment.yaml" --html "$tmp/dr.html" \
  >"$tmp/dr.txt" 2>"$tmp/dr.err"
check "dr replay --html ran" test $? -eq 0
"$bin" dr replay "$src/scenarios/dr/caiso-reenactment.yaml" --html "$tmp/no-such-dir/dr.html" \
  >/dev/null 2>"$tmp/bad.err"
check "dr replay --html into a missing directory: exit 2 before the run" test $? -eq 2
for k in caps dr; do
  check "$k: the page needs no network" test "$(grep -Ec 'https?://' "$tmp/$k.html")" -eq 0
  check "$k: the page loads no other file (only a demo's power.svg, in the shared page)" \
    test "$(grep -oE '(src|href)=[^ >]*' "$tmp/$k.html" | grep -vc '="power.svg"')" -eq 0
  dump_dom "file://$tmp/$k.html" "$tmp/$k.dom"
done
st=$(status_of "$tmp/caps.dom")
check "caps: the report drew ('$st')" grep -Eq '^ok points=[1-9][0-9]* caps arms=14$' <<<"$st"
check "caps: the trade-off plot has its axis titles" grep -q \
  '<canvas id="caps-trade"[^>]*aria-label="energy saved per token (%) against throughput lost (% of the uncapped run' \
  "$tmp/caps.dom"
st=$(status_of "$tmp/dr.dom")
check "dr: the report drew ('$st')" grep -Eq '^ok points=[1-9][0-9]* dr jobs=6$' <<<"$st"
check "dr: the power plot has its axis titles" grep -q \
  '<canvas id="dr-power"[^>]*aria-label="site power (kW, 1-minute means) against time since' "$tmp/dr.dom"
check "dr: the trade-off plot has its axis titles" grep -q \
  '<canvas id="dr-trade"[^>]*aria-label="performance over the event against tier minimum' "$tmp/dr.dom"

# The page's tables against the CLI's: the same header and, row by row, the same cells.
python3 - "$tmp" <<'PY' >"$tmp/compare.txt" 2>&1
import html.parser, re, sys
d = sys.argv[1]
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.t = None; self.cell = None; self.row = []; self.tables = {}; self.legend = []
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "table": self.t = a.get("id"); self.tables[self.t] = []
        if self.t and tag in ("td", "th"): self.cell = ""
        if self.t and tag == "tr": self.row = []
        if tag == "span" and "data-color" in a: self.legend.append(a["data-color"])
    def handle_endtag(self, tag):
        if tag == "table": self.t = None
        if self.cell is not None and tag in ("td", "th"): self.row.append(self.cell.strip()); self.cell = None
        if self.t and tag == "tr": self.tables[self.t].append(self.row)
    def handle_data(self, x):
        if self.cell is not None: self.cell += x
def page(name):
    p = P(); p.feed(open(f"{d}/{name}.dom").read()); return p
bad = 0
def compare(what, cli_head, cli_rows, rows):
    global bad
    head = [c.replace("\u2009", "") for c in rows[0]]
    if head != cli_head:
        print(f"{what}: page columns {head}, CLI {cli_head}"); bad += 1
    got = {}
    for r in rows[1:]:
        cells = [c.replace("\u2009", "").replace("–", "-") for c in r]
        got[cells[0].replace(" BELOW TIER", "")] = cells
    for name, cells in cli_rows.items():
        if name not in got:
            print(f"{what}: row {name} missing from the page"); bad += 1; continue
        if got[name][1:] != cells[1:]:
            print(f"{what}: {name}: page {got[name][1:]}, CLI {cells[1:]}"); bad += 1
    if len(got) != len(cli_rows):
        print(f"{what}: {len(got)} rows on the page, {len(cli_rows)} in the CLI"); bad += 1
# caps: "arm  saved % ..." then one row per arm; the CLI's "saved %" column carries the star.
cli = open(f"{d}/caps.txt").read().splitlines()
at = next(i for i, l in enumerate(cli) if l.startswith("arm "))
head = ["arm", "saved %", "lost %", "EDP %", "same-time%", "vs unif pt", "vs pgpu pt", "cost"]
rows = {}
for l in cli[at + 1:]:
    if l.startswith("best at"): break
    m = re.match(r"(\S+)\s+(-?[0-9.]+\*?)\s+(-?[0-9.]+)\s+(-?[0-9.]+)\s+(-?[0-9.]+)\s+([+-][0-9.]+)\s+([+-][0-9.]+)\s+(.*)$", l)
    if not m: print("CLI caps row not parsed:", l); bad += 1; continue
    rows[m.group(1)] = list(m.groups())
pc = page("caps")
compare("caps", head, rows, pc.tables["caps-table"])
if len(set(pc.legend)) < min(len(rows), 16): print("caps: colours repeat"); bad += 1
# dr: the jobs table under "  job  tier_min  performance  hold_perf  paused_s".
cli = open(f"{d}/dr.txt").read().splitlines()
at = next(i for i, l in enumerate(cli) if l.strip().startswith("job "))
head = cli[at].split()
rows = {}
for l in cli[at + 1:]:
    f = l.split()
    if len(f) < 5 or f[0] == "weighted": break
    rows[f[0]] = f[:5]
pd = page("dr")
compare("dr jobs", head, rows, pd.tables["dr-jobs"])
print(f"caps_rows={len(pc.tables['caps-table']) - 1} dr_jobs={len(pd.tables['dr-jobs']) - 1}")
sys.exit(1 if bad else 0)
PY
rc=$?
cat "$tmp/compare.txt" >&2
check "the tables match the CLI's columns and figures ($(tail -1 "$tmp/compare.txt"))" test "$rc" -eq 0
grep -v '^caps_rows=' "$tmp/compare.txt" | head -8
if [ -n "${FLEXWATT_SHOT_DIR:-}" ]; then
  screenshot "file://$tmp/caps.html" "$FLEXWATT_SHOT_DIR/report-caps.png" 1280,1120
  screenshot "file://$tmp/dr.html" "$FLEXWATT_SHOT_DIR/report-dr.png" 1280,1440
  check "the screenshots were written" test -s "$FLEXWATT_SHOT_DIR/report-dr.png"
fi
finish report_html_caps_dr
