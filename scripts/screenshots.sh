#!/usr/bin/env bash
# Regenerates the screenshots under docs/ from the current build (make screenshots):
#   dashboard-agent.png   the agent's dashboard (tests/cli/agent_dashboard.sh, sim backend)
#   dashboard-site.png    the coordinator's site view (tests/cli/site_view.sh, needs etcd)
#   report.png            the demo's report.html (tests/cli/report_html.sh)
#   report-caps.png, report-dr.png   the caps and dr pages (tests/cli/report_html_caps_dr.sh)
#   demo-terminal.png     the first screen of `flexwatt demo` in a 120x40 terminal: the demo
#                         runs in a detached tmux session; the pane's text, once the demo has
#                         finished, is drawn as a terminal page in headless Chromium
# Each page test saves its PNG when FLEXWATT_SHOT_DIR is set. Usage: screenshots.sh [BIN] [OUT]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$src/build/flexwatt}
out=${2:-$src/docs}
export FLEXWATT_SHOT_DIR=$out
fails=0
for t in agent_dashboard site_view report_html report_html_caps_dr; do
  echo "screenshots: $t"
  bash "$src/tests/cli/$t.sh" "$bin" "$src" >/dev/null || { echo "screenshots: $t failed"; fails=$((fails + 1)); }
done

# The demo's first screen.
command -v tmux >/dev/null || { echo "screenshots: tmux not installed (make deps)"; exit 1; }
tmp=$(mktemp -d)
trap 'tmux -L fw-shot kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
source "$src/tests/cli/lib/common.sh"
source "$src/tests/cli/lib/browser.sh"
tmux -L fw-shot new-session -d -x 120 -y 40 -c "$src" \
  "$bin demo --out $tmp/demo; echo; echo '[demo finished]'; sleep 600"
for _ in $(seq 1200); do
  tmux -L fw-shot capture-pane -p -S - >"$tmp/pane.txt"
  grep -q '^\[demo finished\]' "$tmp/pane.txt" && break
  sleep 1
done
grep -q '^\[demo finished\]' "$tmp/pane.txt" || { echo "screenshots: the demo did not finish"; exit 1; }
# The first screen: the 40 lines the user sees first once the demo has printed.
head -40 "$tmp/pane.txt" | python3 -c '
import html, sys
text = html.escape(sys.stdin.read())
print("<!doctype html><meta charset=utf-8><style>body{margin:0;background:#1e1e1e}"
      "pre{margin:0;padding:10px;color:#e6e6e6;font:13px/1.35 monospace;white-space:pre}"
      "</style><pre>" + text + "</pre>")' >"$tmp/term.html"
screenshot "file://$tmp/term.html" "$out/demo-terminal.png" 1000,760
test -s "$out/demo-terminal.png" || { echo "screenshots: demo-terminal.png not written"; fails=$((fails + 1)); }
echo "screenshots: done in $out ($fails failed)"
[ "$fails" -eq 0 ]
