#!/usr/bin/env bash
# The agent's dashboard page in Debian's headless Chromium against an agent on the sim backend:
# the DOM has the plot canvas, the status line "ok points=N" and the controller. Without a
# headless Chromium (make deps installs chromium-headless-shell) it skips, or fails under CI=true
# (need_tool, lib/common.sh).
# Then `eval --html` and `demo`'s report.html, loaded from file:// without a server.
# Usage: agent_dashboard.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
browser=$(command -v chromium-headless-shell || command -v chromium || true)
source "$(dirname "$0")/lib/agent.sh"
[ -n "$browser" ] || need_tool "chromium-headless-shell (or chromium)"
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$src/scenarios/grpo-7b-a100.yaml
period_s: 0.1
controller: pid:knob=gen_concurrency
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" --duration-s 15 >/dev/null 2>"$tmp/agent.err" &
track_agent $!
wait_healthz
flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
       --disable-component-update --disable-sync "--user-data-dir=$tmp/profile"
       --virtual-time-budget=3000)
timeout 30 "$browser" "${flags[@]}" --dump-dom "http://127.0.0.1:$port/?static=1" \
  >"$tmp/dom.html" 2>"$tmp/browser.err"
check "the page has the plot canvas" grep -q '<canvas id="plot"' "$tmp/dom.html"
check "the page drew points ($(grep -o 'id="status">[^<]*' "$tmp/dom.html"))" \
  grep -Eq 'id="status">ok points=[1-9]' "$tmp/dom.html"
check "the page shows the controller" grep -q 'pid:knob=gen_concurrency' "$tmp/dom.html"
check "the page shows the fallback state" grep -q '>fallback<' "$tmp/dom.html"
# A screenshot for a human look (kept only when FLEXWATT_SHOT names a file).
if [ -n "${FLEXWATT_SHOT:-}" ]; then
  timeout 30 "$browser" "${flags[@]}" --window-size=1200,700 --screenshot="$FLEXWATT_SHOT" \
    "http://127.0.0.1:$port/?static=1&samples=10" 2>/dev/null
fi
kill -TERM "$agent"; wait "$agent"; agent=
# The same page as a self-contained report: `eval --html` and `demo`'s report.html, rendered
# from the embedded JSON with no server (file://) and no other file.
"$bin" eval "$src/scenarios/grpo-7b-a100.yaml" --controllers uncontrolled,pid:knob=gen_concurrency \
  --seeds 2 --duration-s 120 --html "$tmp/eval.html" --json >"$tmp/eval.json" 2>/dev/null
check "eval --html wrote the page with the report JSON embedded" \
  grep -q '<script id="report" type="application/json">{' "$tmp/eval.html"
check "the page needs no network or other file" test "$(grep -Ec 'src=|href=|https?://' "$tmp/eval.html")" -eq 0
timeout 30 "$browser" "${flags[@]}" --dump-dom "file://$tmp/eval.html" >"$tmp/report.html" 2>/dev/null
check "the report page drew the curves ($(grep -o 'id="status">[^<]*' "$tmp/report.html"))" \
  grep -Eq 'id="status">ok points=[1-9][0-9]* report' "$tmp/report.html"
check "the report page lists the controllers" grep -q '<td>pid:knob=gen_concurrency</td>' "$tmp/report.html"
(cd "$src" && "$bin" demo --seeds 1 --duration-s 60 --out "$tmp/demo" --json >"$tmp/demo.json" \
  2>"$tmp/demo.err")
check "demo wrote report.html (path on stderr)" grep -q "demo: wrote $tmp/demo/report.html" "$tmp/demo.err"
check "demo's stdout is report.json alone" test "$(jq '.controllers | length > 0' "$tmp/demo.json")" = true
timeout 30 "$browser" "${flags[@]}" --dump-dom "file://$tmp/demo/report.html" >"$tmp/demo_dom.html" 2>/dev/null
check "demo's report.html renders" grep -Eq 'id="status">ok points=[1-9][0-9]* report' "$tmp/demo_dom.html"
echo "fails=$fails"
[ "$fails" -eq 0 ]
