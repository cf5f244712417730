#!/usr/bin/env bash
# scripts/results.sh's blocks (`make results [BLOCK=...] [FORCE=1]`), on test blocks
# (RESULTS_BLOCKS_FILE) that run a stub binary in a scratch copy of the script and of three docs:
# --list; an unknown block is exit 2 naming it; a block splices its own markers and no others
# (an undeclared splice fails the block); docs/results.md gets a section per block; a second
# run is `cached` and runs nothing, and re-splices a vandalized table; FORCE=1 runs again; a
# changed input or binary runs again; a block named alone reads the block it needs from the
# cache without splicing it; a failed block stops the run naming its log, and the next run
# resumes at it; so does a killed one; the summary and timings.tsv. Fast: nothing is simulated.
# Usage: bash results_blocks.sh FLEXWATT_BIN SOURCE_DIR
set -u
src=$(cd "$2" && pwd)
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
command -v flock >/dev/null || need_tool flock

repo=$tmp/repo
mkdir -p "$repo/scripts" "$repo/docs" "$repo/inputs"
cp "$src/scripts/results.sh" "$repo/scripts/"
echo one >"$repo/inputs/alpha.txt"
# The stub: prints its verb and a fresh number, and counts its calls per verb.
cat >"$tmp/flexwatt" <<EOF
#!/bin/sh
echo "\$1" >>"$tmp/calls"
echo "\$1 output \$(date +%s%N)"
EOF
chmod +x "$tmp/flexwatt"
: >"$tmp/calls"
calls() { grep -cx "$1" "$tmp/calls"; }
printf 'A doc.\n<!-- results:alpha:begin -->\nOLD-ALPHA\n<!-- results:alpha:end -->\nbetween\n<!-- results:beta:begin -->\nOLD-BETA\n<!-- results:beta:end -->\nA tail.\n' >"$tmp/a.md"
printf 'B doc.\n<!-- results:gamma:begin -->\nOLD-GAMMA\n<!-- results:gamma:end -->\n<!-- results:delta:begin -->\nOLD-DELTA\n<!-- results:delta:end -->\n' >"$tmp/b.md"
reset_docs() { cp "$tmp/a.md" "$tmp/b.md" "$repo/docs/"; rm -f "$repo/docs/results.md"; }
reset_docs

cat >"$tmp/blocks.sh" <<'EOF'
blocks_reset
block alpha results t_alpha "docs/a.md:alpha docs/results.md:alpha" "inputs" "" ""
block beta results t_beta "docs/a.md:beta docs/b.md:gamma docs/results.md:beta" "" "" "alpha"
block gamma all t_gamma "docs/b.md:delta" "" "" ""
if [ -n "${ROGUE:-}" ]; then block rogue all t_rogue "docs/b.md:delta" "" "" ""; fi
t_alpha() {
  "$bin" alpha >"$tmp/alpha.txt"
  splice docs/a.md alpha "$tmp/alpha.txt"
  { echo "## alpha"; cat "$tmp/alpha.txt"; } >>"$out"
}
t_beta() {
  if [ "${FAIL_BETA:-}" = quietly ]; then false; echo "beta: went on after a failed command" >&2; fi
  if [ -n "${FAIL_BETA:-}" ]; then echo "beta: failing as asked" >&2; exit 3; fi
  if [ -n "${SLOW_BETA:-}" ]; then echo "beta: sleeping" >&2; sleep 60; fi
  "$bin" beta >"$tmp/beta.txt"
  cat "$tmp/alpha.txt" "$tmp/beta.txt" >"$tmp/ab.txt"  # alpha's output, copied in from its entry
  splice docs/a.md beta "$tmp/ab.txt"
  splice docs/b.md gamma "$tmp/beta.txt"
  echo "## beta" >>"$out"
}
t_gamma() { "$bin" gamma >"$tmp/gamma.txt"; splice docs/b.md delta "$tmp/gamma.txt"; }
t_rogue() { "$bin" rogue >"$tmp/rogue.txt"; splice docs/b.md delta "$tmp/rogue.txt"; splice docs/a.md alpha "$tmp/rogue.txt"; }
EOF
export RESULTS_BLOCKS_FILE=$tmp/blocks.sh
unset FORCE BLOCK FAIL_BETA SLOW_BETA ROGUE
rs() { bash "$repo/scripts/results.sh" "$@" >"$tmp/out" 2>&1; }
# section DOC NAME: the lines between NAME's markers
section() { awk -v b="<!-- results:$2:begin -->" -v e="<!-- results:$2:end -->" '$0 == e { p = 0 } p; $0 == b { p = 1 }' "$1"; }
entries() { find "$repo/.results-cache/$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
export tmp repo
export -f calls section entries  # for the checks' bash -c

rs --list; rc=$?
check "--list: exit 0" test "$rc" = 0
check "--list: alpha in results, writing its markers" grep -qE '^alpha +results +- +docs/a.md:alpha docs/results.md:alpha' "$tmp/out"
check "--list: gamma all-only" grep -qE '^gamma +all-only ' "$tmp/out"
check "--list: beta reads alpha" grep -qE '^beta .*\[reads: alpha\]' "$tmp/out"

rs --block alpha,nope "$tmp/flexwatt"; rc=$?
check "an unknown block: exit 2" test "$rc" = 2
check "... naming it" grep -q "unknown block 'nope'" "$tmp/out"
check "... and nothing ran" test ! -s "$tmp/calls"

# The plain blocks: alpha, then beta; gamma is all-only.
rs "$tmp/flexwatt"; rc=$?
check "make results: exit 0" test "$rc" = 0
check "... alpha and beta start and are done, with their wall time" bash -c "grep -q 'results: block alpha: start' '$tmp/out' && grep -qE 'results: block alpha: done in [0-9]+:[0-9]{2}$' '$tmp/out' && grep -qE 'results: block beta: done in [0-9]+:[0-9]{2}$' '$tmp/out'"
check "... gamma (all-only) not run" test "$(calls gamma)" = 0
check "... docs/a.md: alpha's table between its markers" bash -c "section '$repo/docs/a.md' alpha | grep -qx 'alpha output [0-9]*'"
check "... beta's from alpha's output and its own" test "$(section "$repo/docs/a.md" beta | cut -d' ' -f1 | tr '\n' ' ')" = "alpha beta "
check "... the text around the markers kept" test "$(grep -vc '^alpha output\|^beta output\|^<!--' "$repo/docs/a.md")" = 3
check "... docs/b.md: gamma spliced, delta (gamma's block did not run) left" bash -c "section '$repo/docs/b.md' gamma | grep -q '^beta output' && test \"\$(section '$repo/docs/b.md' delta)\" = OLD-DELTA"
check "... docs/results.md: its header, then a section per block, in order" bash -c "head -1 '$repo/docs/results.md' | grep -q '^# Results' && grep -n '^<!-- results:' '$repo/docs/results.md' | cut -d: -f2- | tr '\n' ' ' | grep -qx '<!-- results:alpha:begin --> <!-- results:alpha:end --> <!-- results:beta:begin --> <!-- results:beta:end --> '"
check "... each section headed by the block that wrote it" bash -c "section '$repo/docs/results.md' alpha | head -1 | grep -q '^<!-- block alpha: scripts/results.sh at commit .*FLEXWATT_BIN sha256 [0-9a-f]\{16\}; make results BLOCK=alpha -->$' && section '$repo/docs/results.md' alpha | grep -qx '## alpha'"
check "... a summary with the total" bash -c "grep -q 'results: summary' '$tmp/out' && grep -qE '^  total +[0-9]+:[0-9]{2}$' '$tmp/out'"
check "... timings.tsv: a line per block" test "$(grep -cP '\t(alpha|beta)\tdone\t' "$repo/.results-cache/timings.tsv")" = 2
cp -r "$repo/docs" "$tmp/docs-1"

rs "$tmp/flexwatt"; rc=$?
check "the second run: exit 0" test "$rc" = 0
check "... both blocks cached" bash -c "grep -q '^results: block alpha: cached' '$tmp/out' && grep -q '^results: block beta: cached' '$tmp/out'"
check "... the binary not run" test "$(calls alpha) $(calls beta)" = "1 1"
check "... the docs as the first run left them" diff -r "$tmp/docs-1" "$repo/docs"
check "... timings.tsv: cached lines" test "$(grep -cP '\t(alpha|beta)\tcached\t' "$repo/.results-cache/timings.tsv")" = 2

sed -i 's/^alpha output .*/VANDAL/' "$repo/docs/a.md"
rs "$tmp/flexwatt"
check "a cached block re-splices its table" bash -c "diff -r '$tmp/docs-1' '$repo/docs' && test \"\$(calls alpha)\" = 1"

# One block named: its markers only.
printf 'A doc.\n<!-- results:alpha:begin -->\nX\n<!-- results:alpha:end -->\nbetween\n<!-- results:beta:begin -->\nHAND\n<!-- results:beta:end -->\nA tail.\n' >"$repo/docs/a.md"
sed -i 's/^beta output .*/HAND/' "$repo/docs/b.md"
FORCE=1 rs --block alpha "$tmp/flexwatt"; rc=$?
check "FORCE=1 --block alpha: exit 0, alpha run again" bash -c "test $rc = 0 && test \"\$(calls alpha)\" = 2 && grep -q 'results: block alpha: done in' '$tmp/out'"
check "... its table spliced" bash -c "section '$repo/docs/a.md' alpha | grep -qx 'alpha output [0-9]*'"
check "... and no other block's: beta's markers left as they were" bash -c "test \"\$(section '$repo/docs/a.md' beta)\" = HAND && test \"\$(section '$repo/docs/b.md' gamma)\" = HAND && test \"\$(calls beta)\" = 1"
check "... three entries at most per block" test "$(entries alpha)" -le 3

# beta named alone: alpha's new outputs change beta's key; alpha comes from the cache, unspliced.
sed -i 's/^alpha output .*/VANDAL/' "$repo/docs/a.md"
rs --block beta "$tmp/flexwatt"; rc=$?
check "--block beta: alpha read from the cache, not run" bash -c "test $rc = 0 && test \"\$(calls alpha)\" = 2 && grep -q 'results: block alpha: cached (read by the blocks named, not spliced)' '$tmp/out'"
check "... nor spliced" test "$(section "$repo/docs/a.md" alpha)" = VANDAL
check "... beta run again (what it reads changed)" bash -c "test \"\$(calls beta)\" = 2 && section '$repo/docs/a.md' beta | grep -q '^alpha output'"

echo two >"$repo/inputs/alpha.txt"
rs "$tmp/flexwatt"
check "a changed input runs its block again" bash -c "grep -q 'results: block alpha: done in' '$tmp/out' && test \"\$(calls alpha)\" = 3"
check "... and the block that reads it" test "$(calls beta)" = 3
echo "# changed" >>"$tmp/flexwatt"
rs "$tmp/flexwatt"
check "a changed binary runs every block again" test "$(calls alpha) $(calls beta)" = "4 4"
FORCE=1 rs "$tmp/flexwatt"
check "FORCE=1: every block again" test "$(calls alpha) $(calls beta)" = "5 5"
rs --all "$tmp/flexwatt"; rc=$?
check "--all: gamma run, alpha and beta cached" bash -c "test $rc = 0 && test \"\$(calls gamma) \$(calls alpha)\" = '1 5' && section '$repo/docs/b.md' delta | grep -q '^gamma output'"

ROGUE=1 rs --block rogue "$tmp/flexwatt"; rc=$?
check "a block splicing a marker it does not declare fails (exit 1)" test "$rc" = 1
check "... saying so" grep -q 'block rogue splices docs/a.md:alpha, which its block line does not declare' "$tmp/out"
check "... its declared table not spliced either" bash -c "section '$repo/docs/b.md' delta | grep -q '^gamma output'"

# A failed block stops the run; the next run resumes at it.
reset_docs
rm -rf "$repo/.results-cache"
: >"$tmp/calls"
FAIL_BETA=1 rs "$tmp/flexwatt"; rc=$?
check "a failed block: exit 1" test "$rc" = 1
check "... naming the block and its log" grep -q 'results: block beta FAILED (exit status 3).*its log: .results-cache/logs/beta.log' "$tmp/out"
check "... saying where the run stopped and how to resume" grep -q 'results: stopped at block beta .*run again to resume at beta' "$tmp/out"
check "... after the summary, beta FAILED in it" grep -qE '^  beta +FAILED' "$tmp/out"
check "... and in timings.tsv" grep -qP '\tbeta\tFAILED\t' "$repo/.results-cache/timings.tsv"
check "... the log holds the block's output" grep -q 'beta: failing as asked' "$repo/.results-cache/logs/beta.log"
check "... the block before it spliced" bash -c "section '$repo/docs/a.md' alpha | grep -qx 'alpha output [0-9]*'"
check "... the failed one not, and not cached" bash -c "test \"\$(section '$repo/docs/a.md' beta)\" = OLD-BETA && test \"\$(entries beta)\" = 0"
FAIL_BETA=quietly rs "$tmp/flexwatt"; rc=$?
check "a command failing inside a block fails it (errexit)" sh -c "test $rc = 1 && grep -q 'block beta FAILED (exit status 1)' '$tmp/out' && ! grep -q 'went on' '$tmp/out'"
rs "$tmp/flexwatt"; rc=$?
check "the next run resumes: alpha cached, beta run" bash -c "test $rc = 0 && grep -q '^results: block alpha: cached' '$tmp/out' && grep -q 'results: block beta: done in' '$tmp/out' && test \"\$(calls alpha) \$(calls beta)\" = '1 1'"

# A killed run: nothing of the block it was in is kept; the next run resumes at it.
rm -rf "$repo/.results-cache/beta"
SLOW_BETA=1 setsid bash "$repo/scripts/results.sh" "$tmp/flexwatt" >"$tmp/out-killed" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'beta: sleeping' "$tmp/out-killed" && break; sleep 0.1; done
kill -TERM -- "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "a killed run: beta was running" grep -q 'beta: sleeping' "$tmp/out-killed"
check "... no entry of it, no staging left" bash -c "test \"\$(entries beta)\" = 0 && test ! -e '$repo/.results-cache/.staging'"
rs "$tmp/flexwatt"; rc=$?
check "... the next run resumes at beta" bash -c "test $rc = 0 && grep -q '^results: block alpha: cached' '$tmp/out' && grep -q 'results: block beta: done in' '$tmp/out' && test \"\$(calls alpha) \$(calls beta)\" = '1 2'"

# The Makefile passes BLOCK and FORCE.
check "make results BLOCK=a,b FORCE=1 runs results.sh --block 'a,b' --force" bash -c \
  "make -n -C '$src' results BLOCK=a,b FORCE=1 BUILD=$tmp/nobuild 2>/dev/null | grep -q \"scripts/results.sh --block 'a,b' --force $tmp/nobuild/flexwatt\""
if command -v shellcheck >/dev/null; then
  check "shellcheck scripts/results.sh" shellcheck "$src/scripts/results.sh"
else
  echo "note: shellcheck not installed (make deps installs it): not checked"
fi
check "the repository's blocks list" bash -c "env -u RESULTS_BLOCKS_FILE bash '$src/scripts/results.sh' --list | grep -qE '^headline +results .*README.md'"
finish results_blocks
