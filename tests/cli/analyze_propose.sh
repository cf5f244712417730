#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# End-to-end: `flexwatt analyze` without --budget-w (issue #47 item 5): it summarises the trace
# and proposes budgets: for each judging window length the smallest budget no window of that
# length exceeds (checked by judging the trace at it: no violation; and just below it: one at
# least), with the oversubscription headroom (nameplate - provisioned power); under --scope gpu
# the proposal is the largest GPU's; a window longer than the run proposes nothing.
# Usage: bash analyze_propose.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
ex="$src/data/examples/trace"  # 4 GPUs, 60 s at 0.5 s

"$bin" analyze "$ex" >"$out/table.txt" 2>"$out/table.err"
rc=$?
check "no --budget-w: exit 0 ($(head -1 "$out/table.err"))" test $rc -eq 0
check "the header says no budget was given" grep -q ", no budget (proposals below)$" "$out/table.txt"
check "the summary is there (node row)" grep -qE "^node +120 " "$out/table.txt"
check "the proposal section" grep -q "^proposed budgets (no --budget-w given)" "$out/table.txt"
check "a proposal for 10 s windows" grep -qE "^ +10 +[0-9]+\.[0-9] " "$out/table.txt"
check "300 s (longer than the run): none" grep -qE "^ +300 +- .*no window judged" "$out/table.txt"
check "the headroom line" grep -qE "^  node: provisioned [0-9.]+ W" "$out/table.txt"

"$bin" analyze "$ex" --nameplate-w 700 --json >"$out/p.json"
check "json: exit 0" test $? -eq 0
check "json: budget_w null" jqt '.budget_w == null' "$out/p.json"
check "json: one proposal per window (0.5, 10, 30, 300)" \
  jqt '[.proposed_budgets.budgets[].window_s] == [0.5, 10, 30, 300]' "$out/p.json"
check "json: each proposal is the node's peak window mean" \
  jqt '[.proposed_budgets.budgets[:3][] | .budget_w] == [.node.windows[:3][] | .peak_mean_w]' \
  "$out/p.json"
check "json: proposals grow as windows shrink (more peak)" \
  jqt '.proposed_budgets.budgets | .[0].budget_w >= .[1].budget_w and .[1].budget_w >= .[2].budget_w' \
  "$out/p.json"
check "json: 300 s proposes nothing" jqt '.proposed_budgets.budgets[3].budget_w == null' "$out/p.json"
check "json: headroom = nameplate - provisioned (node, 2800 W)" \
  jqt '.proposed_budgets.oversubscription_headroom.series[0] as $h | $h.series == "node"
       and $h.nameplate_w == 2800 and (($h.headroom_w - (2800 - $h.provisioned_w)) | fabs) < 1e-9
       and $h.headroom_w > 0 and $h.provisioned_w == .oversubscription.provisioned_w
       and $h.ratio == .oversubscription.ratio' "$out/p.json"

# Each proposal holds, and nothing smaller does: judged at it, no window over; just below, one.
for i in 0 1 2; do
  w=$(jq -r ".proposed_budgets.budgets[$i].window_s" "$out/p.json")
  b=$(jq -r ".proposed_budgets.budgets[$i].budget_w" "$out/p.json")
  below=$(jq -n "$b * (1 - 1e-6)")
  "$bin" analyze "$ex" --budget-w "$b" --windows "$w" --json >"$out/at.json"
  check "${w} s: no window over the proposed $b W" jqt '.node.windows[0].violations == 0' "$out/at.json"
  "$bin" analyze "$ex" --budget-w "$below" --windows "$w" --json >"$out/below.json"
  check "${w} s: a window over $below W" jqt '.node.windows[0].violations >= 1' "$out/below.json"
done

# --scope gpu: one budget for every GPU, the largest GPU's peak; named.
"$bin" analyze "$src/data/examples/nvsmi_8gpu.csv" --scope gpu --windows 1,5 --json >"$out/g.json"
check "scope gpu: exit 0" test $? -eq 0
check "scope gpu: budget = max over GPUs, the series named" \
  jqt '. as $d | [range(0; 2) | . as $i | $d.proposed_budgets.budgets[$i] as $p
       | ([$d.gpus[].windows[$i].peak_mean_w] | max) as $m
       | $p.budget_w == $m and ($p.series | test("^gpu[0-7]$"))] | all' "$out/g.json"
"$bin" analyze "$src/data/examples/nvsmi_8gpu.csv" --scope gpu --windows 1,5 >"$out/g.txt"
check "scope gpu: the text says per GPU" grep -q "smallest budget per GPU" "$out/g.txt"

# A given budget keeps the old output: no proposal section; a given nan or 0 is refused.
"$bin" analyze "$ex" --budget-w 2400 >"$out/b.txt"
check "with --budget-w: no proposal section" test "$(grep -c 'proposed budgets' "$out/b.txt")" -eq 0
expect_exit2 "--budget-w nan refused" "--budget-w: must be a positive" analyze "$ex" --budget-w nan
expect_exit2 "--budget-w 0 refused" "--budget-w: must be a positive" analyze "$ex" --budget-w 0
finish analyze_propose
