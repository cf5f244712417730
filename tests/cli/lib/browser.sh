# Headless Chromium for the page tests (tests/cli/agent_dashboard.sh, report_html.sh), on top
# of common.sh. Sourcing it sets $browser (Debian's chromium-headless-shell, else chromium;
# `make deps` installs the first) and the array $browser_flags (needs $tmp for the profile).
# Without a browser the test exits 0 with "skip: …", except under CI=true, where it fails.
browser=$(command -v chromium-headless-shell || command -v chromium || true)
if [ -z "$browser" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: no chromium-headless-shell or chromium (CI=true; make deps installs it)"
    exit 1
  fi
  echo "skip: no chromium-headless-shell or chromium (make deps installs it)"
  exit 0
fi
browser_flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --hide-scrollbars "--user-data-dir=$tmp/profile")

# dump_dom URL OUT [BUDGET_MS]: the DOM after the page's scripts ran (virtual time budget).
dump_dom() {
  timeout 40 "$browser" "${browser_flags[@]}" --virtual-time-budget="${3:-3000}" --dump-dom "$1" \
    >"$2" 2>>"$tmp/browser.err"
}

# screenshot URL PNG WIDTH,HEIGHT [BUDGET_MS]: a PNG of the rendered page.
screenshot() {
  timeout 40 "$browser" "${browser_flags[@]}" --virtual-time-budget="${4:-3000}" \
    --window-size="$3" --screenshot="$2" "$1" >/dev/null 2>>"$tmp/browser.err"
}

# status_of DOM: the text of the page's hidden machine-readable #status element.
status_of() { grep -o 'id="status" hidden="">[^<]*' "$1" | sed 's/.*>//'; }
