#!/usr/bin/env bash
# Pre-registration of policy selection (issue 42 item 6; policies/preregistration/README.md).
#
# Checks SOURCE_DIR's policies/preregistration/*.md records against its git history:
# - every record has the fenced `preregistration` block with every field, and its `selection`
#   is the file's name; every policies/*.json is in the `selects:` of exactly one record and
#   every file named in a `selects:` exists (a pending selection has `selects: none`);
#   policies/README.md points at every record;
# - `status: preregistered`: the commit that first added the record (C) touches no result and
#   no selected file; every commit touching a `results:` path that C's tree lacks (at least one
#   must be such a new path) descends from C, so results committed before the record, or on a
#   branch forked before it, fail; a `results:` path that C's tree already had, and every
#   selected policy, have a version committed after C; `status`, `rule`, `candidates`,
#   `seeds`, `metric` and `results` are the same as in C, and the record never becomes
#   retrospective. A record with no results yet passes as pending;
# - `status: retrospective`: every `rule-commit` and `results-commit` is a commit of HEAD's
#   history, every `results-commit` touches a `results:` path, `rule-anchor` first appears
#   in `rule-source` in the first `rule-commit`, `results-anchor` (if given) first appears in
#   `results-source` in one of the `results-commit`s, and a `reason` is given. For each record,
#   the test prints whether the rule came before the first results.
# Without history (SOURCE_DIR not in git, policies/ untracked there, a shallow clone)
# ancestry and first appearance cannot be decided: the test says `skip:` and what it
# did not check, still runs the checks that need no history, and fails under CI=true (CI must
# check out full history; a pass there would otherwise mean nothing). Elsewhere it passes.
# Without git at all the whole test skips (need_tool: a failure under CI=true).
# The same checker then runs on canned scratch repositories: a record committed before its
# results passes, one committed after them fails, a policy with no record fails, and so do a
# rule edited after registration, results from a branch forked before it, a missing field, an
# unknown retrospective commit, and a missing history under CI=true. Takes a few seconds.
# Usage: preregistration.sh FLEXWATT_BIN SOURCE_DIR
set -u
src=$2
source "$(dirname "$0")/lib/common.sh"
command -v git > /dev/null || need_tool git
scratch_dir tmp

required=(selection status selects rule candidates seeds metric results)
required_retro=(rule-commit results-commit rule-source rule-anchor reason)
frozen=(status rule candidates seeds metric results)

# block: the lines of the fenced ```preregistration block of the file (or stdin with -).
block() { awk '/^```preregistration[[:space:]]*$/ {inb = 1; next} inb && /^```/ {exit} inb' "$1"; }
# field BLOCK KEY: the value of "KEY: value" in BLOCK (trailing blanks cut).
field() {
  local line
  while IFS= read -r line; do
    [[ $line == "$2:"* ]] || continue
    line=${line#"$2:"}; line=${line#"${line%%[![:space:]]*}"}
    echo "${line%"${line##*[![:space:]]}"}"; return
  done <<< "$1"
}

# audit DIR: checks DIR's records; prints `problem:`, `note:` and `skip:` lines; status 1 when
# a problem was found. Reads CI from the environment.
audit() {
  local d=$1 problems=0 hist="" top name f b k v st p c reg rel n new sel res
  local -a resa sela
  local -A selected_by=()
  local -a records=()
  bad() { echo "problem: $*"; problems=$((problems + 1)); }
  # Is there full history to check against?
  if ! top=$(git -C "$d" rev-parse --show-toplevel 2>&1); then
    hist="$d is not in a git work tree (${top//$'\n'/ })"
  elif [ "$(git -C "$d" rev-parse --is-shallow-repository)" = true ]; then
    hist="$top is a shallow clone (git fetch --unshallow)"
  elif ! git -C "$d" rev-parse -q --verify HEAD > /dev/null; then
    hist="$top has no commit"
  elif [ -z "$(git -C "$d" ls-files -- policies | head -n 1)" ]; then
    hist="policies/ is not tracked by the git repository at $top"
  fi
  if [ -n "$hist" ]; then
    echo "skip: history checks not run: $hist; not checked: the order of each pre-registration" \
         "and its results, the frozen fields, the retrospective records' commits and anchors"
    [ "${CI:-}" = true ] && bad "under CI=true the history checks must run (full clone needed)"
  fi
  for f in "$d"/policies/preregistration/*.md; do
    [ -f "$f" ] && [ "$(basename "$f")" != README.md ] && records+=("$f")
  done
  [ ${#records[@]} -gt 0 ] || bad "no record in $d/policies/preregistration/"
  for f in "${records[@]}"; do
    name=$(basename "$f" .md)
    b=$(block "$f")
    if [ -z "$b" ]; then bad "$name: no \`\`\`preregistration block"; continue; fi
    st=$(field "$b" status)
    local -a need=("${required[@]}")
    [ "$st" = retrospective ] && need+=("${required_retro[@]}")
    for k in "${need[@]}"; do [ -n "$(field "$b" "$k")" ] || bad "$name: field '$k' missing or empty"; done
    [ "$(field "$b" selection)" = "$name" ] || bad "$name: selection '$(field "$b" selection)' is not the file's name"
    case "$st" in preregistered|retrospective) ;; *) bad "$name: status '$st' is neither preregistered nor retrospective"; continue ;; esac
    sel=$(field "$b" selects); res=$(field "$b" results)
    read -ra resa <<< "$res"; sela=(); [ "$sel" = none ] || read -ra sela <<< "$sel"
    if [ "$sel" != none ]; then
      for p in "${sela[@]}"; do
        selected_by[$p]+="$name "
        [ -f "$d/$p" ] || bad "$name: selects $p, which does not exist"
      done
    fi
    rel=${f#"$d"/}
    [ -n "$hist" ] || reg=$(git -C "$d" log --full-history --no-renames --diff-filter=A --topo-order --format=%H HEAD -- "$rel" | tail -n 1)
    if [ "$st" = retrospective ]; then
      for p in "${resa[@]}"; do [ -e "$d/$p" ] || bad "$name: results path $p does not exist"; done
      [ -n "$hist" ] && continue
      if [ -n "$reg" ] && [ "$(git -C "$d" show "$reg:./$rel" | block - | { field "$(cat)" status; })" = preregistered ]; then
        bad "$name: registered as preregistered in ${reg:0:12}, now retrospective"
      fi
      local first_rule="" first_res="" anchor_at
      for c in $(field "$b" rule-commit) $(field "$b" results-commit); do
        if ! git -C "$d" rev-parse -q --verify "$c^{commit}" > /dev/null ||
           ! git -C "$d" merge-base --is-ancestor "$c" HEAD 2> /dev/null; then
          bad "$name: $c is not a commit of HEAD's history"
        fi
      done
      for c in $(field "$b" results-commit); do
        [ -n "$(git -C "$d" diff-tree -r -m --root --name-only --no-commit-id "$c" -- "${resa[@]}" 2> /dev/null)" ] ||
          bad "$name: results-commit $c touches none of: $res"
      done
      first_rule=$(git -C "$d" rev-parse -q --verify "$(field "$b" rule-commit | cut -d' ' -f1)^{commit}")
      anchor_at=$(git -C "$d" log -S"$(field "$b" rule-anchor)" --reverse --format=%H HEAD -- "$(field "$b" rule-source)" | head -n 1)
      if [ -z "$first_rule" ] || [ "$anchor_at" != "$first_rule" ]; then
        bad "$name: rule-anchor first appears in ${anchor_at:0:12}, not in rule-commit ${first_rule:0:12}"
      fi
      v=$(field "$b" results-anchor)
      if [ -n "$v" ]; then
        anchor_at=$(git -C "$d" log -S"$v" --reverse --format=%H HEAD -- "$(field "$b" results-source)" | head -n 1)
        n=0
        for c in $(field "$b" results-commit); do
          [ "$(git -C "$d" rev-parse -q --verify "$c^{commit}")" = "${anchor_at:-none}" ] && n=1
        done
        [ "$n" -eq 1 ] || bad "$name: results-anchor first appears in ${anchor_at:0:12}, which is not a results-commit"
      fi
      first_res=$(git -C "$d" rev-parse -q --verify "$(field "$b" results-commit | cut -d' ' -f1)^{commit}")
      if [ -n "$first_rule" ] && [ -n "$first_res" ]; then
        if [ "$first_rule" != "$first_res" ] && git -C "$d" merge-base --is-ancestor "$first_rule" "$first_res"; then
          v="before"; else v="NOT before"; fi
        echo "note: $name: retrospective; rule first in $(git -C "$d" log -1 --format='%h %ad' --date=iso "$first_rule"), first results in $(git -C "$d" log -1 --format='%h %ad' --date=iso "$first_res"): rule commit $v the first results commit"
      fi
      continue
    fi
    # status: preregistered
    [ -n "$hist" ] && continue
    if [ -z "$reg" ]; then
      n=0
      for p in "${resa[@]}"; do
        if [ -e "$d/$p" ] || [ -n "$(git -C "$d" log --format=%H -n 1 HEAD -- "$p")" ]; then n=$((n + 1)); fi
      done
      if [ "$n" -gt 0 ] || [ "$sel" != none ]; then bad "$name: not committed, yet its results or selected files are"
      else echo "note: $name: preregistered, not committed yet, no results: pending"; fi
      continue
    fi
    [ -z "$(git -C "$d" diff-tree -r -m --root --name-only --no-commit-id "$reg" -- "${resa[@]}" "${sela[@]}")" ] ||
      bad "$name: the registration commit ${reg:0:12} itself adds results or selected files"
    local oldb; oldb=$(git -C "$d" show "$reg:./$rel" | block -)
    for k in "${frozen[@]}"; do
      [ "$(field "$oldb" "$k")" = "$(field "$b" "$k")" ] || bad "$name: '$k' changed after registration in ${reg:0:12}"
    done
    new=0; n=0
    # later WHAT PATH: PATH, which existed at the registration, must have a version committed
    # after it, and every commit touching it must be the registration's ancestor or descendant.
    later() {
      local m=0 x
      for x in $(git -C "$d" log --full-history --no-renames --format=%H HEAD -- "$2"); do
        if [ "$x" != "$reg" ] && git -C "$d" merge-base --is-ancestor "$reg" "$x"; then m=$((m + 1))
        elif ! git -C "$d" merge-base --is-ancestor "$x" "$reg"; then
          bad "$name: ${x:0:12} touches $2 on a branch that does not contain the registration ${reg:0:12}"
        fi
      done
      [ "$m" -gt 0 ] || bad "$name: $1 $2 has no version after the registration ${reg:0:12}"
    }
    for p in "${resa[@]}"; do
      if git -C "$d" cat-file -e "$reg:./$p" 2> /dev/null; then
        later "results path" "$p"; n=$((n + 1))
      else
        new=$((new + 1))
        for c in $(git -C "$d" log --full-history --no-renames --format=%H HEAD -- "$p"); do
          n=$((n + 1))
          if [ "$c" = "$reg" ] || ! git -C "$d" merge-base --is-ancestor "$reg" "$c"; then
            bad "$name: ${c:0:12} touches results path $p but does not descend from the registration ${reg:0:12}"
          fi
        done
      fi
    done
    [ "$new" -gt 0 ] || bad "$name: every results path existed at the registration ${reg:0:12}: the results came first"
    if [ "$sel" != none ]; then
      for p in "${sela[@]}"; do later "selected" "$p"; done
    fi
    [ "$n" -gt 0 ] || echo "note: $name: preregistered in ${reg:0:12}, no results committed yet: pending"
  done
  for p in "$d"/policies/*.json; do
    [ -f "$p" ] || continue
    k=${p#"$d"/}
    n=$(wc -w <<< "${selected_by[$k]:-}")
    [ "$n" -eq 1 ] || bad "$k is selected by $n records (${selected_by[$k]:-none}); it needs exactly one"
  done
  [ "$problems" -eq 0 ]
}

# --- the source tree --------------------------------------------------------------------
out=$(audit "$src"); rc=$?
echo "$out"
check "the source tree's records pass (rc=$rc)" test "$rc" -eq 0
for f in "$src"/policies/preregistration/*.md; do
  n=$(basename "$f"); [ "$n" = README.md ] && continue
  check "policies/README.md points at preregistration/$n" grep -q "preregistration/$n" "$src/policies/README.md"
done

# --- canned repositories ----------------------------------------------------------------
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid
g() { git -C "$repo" -c init.defaultBranch=main -c commit.gpgsign=false -c core.hooksPath=/dev/null "$@"; }
commit() { g add -A && g commit -q -m "$1"; }
# record FILE STATUS SELECTS RESULTS [RULE]: write a record with every field.
record() {
  mkdir -p "$(dirname "$1")"
  { echo '```preregistration'
    echo "selection: $(basename "$1" .md)"
    echo "status: $2"
    echo "selects: $3"
    echo "rule: ${5:-most tokens among candidates at most 0.5 points over the reference}"
    echo "candidates: seed 1, seed 2"; echo "seeds: training 1-2; validation 500000-500009"
    echo "metric: completed-step tokens, offset-averaged violation rate"
    echo "results: $4"
    if [ "$2" = retrospective ]; then
      echo "rule-commit: $base"; echo "results-commit: $base"
      echo "rule-source: policies/README.md"; echo "rule-anchor: the old rule"
      echo "reason: selected before pre-registration existed"
    fi
    echo '```'; } > "$1"
}
# new_repo DIR: a repository whose one policy, a.json, has a retrospective record.
new_repo() {
  repo=$1; mkdir -p "$repo/policies"; g init -q
  echo "the old rule" > "$repo/policies/README.md"
  echo '{}' > "$repo/policies/a.json"; echo 1 > "$repo/policies/a.train.csv"
  commit base; base=$(g rev-parse --short=12 HEAD)
  record "$repo/policies/preregistration/a.md" retrospective policies/a.json policies/a.train.csv
  commit "a's record"
}
R=policies/preregistration/results/b.md
# expect NAME WANT_RC [PATTERN]: audit $repo; its status must be WANT_RC and its output match PATTERN.
expect() {
  local out rc
  out=$(audit "$repo"); rc=$?
  check "$1 (rc=$rc)" test "$rc" -eq "$2"
  [ -z "${3:-}" ] || check "$1: says /$3/" grep -qE -- "$3" <<< "$out"
  if [ "$rc" -ne "$2" ]; then echo "${out//$'\n'/$'\n'    }"
  else echo "ok: $1: $(grep -m 1 '^problem' <<< "$out" || grep -m 1 '^skip' <<< "$out" || echo passed)"; fi
  return 0
}

new_repo "$tmp/before"
expect "canned: a retrospective record alone passes" 0 "rule commit NOT before the first results commit"
record "$repo/policies/preregistration/b.md" preregistered none "$R policies/b.train.csv"
commit "register b"
expect "canned: registered, no results yet: pending" 0 "pending"
mkdir -p "$repo/policies/preregistration/results"; echo "b: seed 1 wins" > "$repo/$R"
echo 1 > "$repo/policies/b.train.csv"; echo '{}' > "$repo/policies/b.json"
record "$repo/policies/preregistration/b.md" preregistered policies/b.json "$R policies/b.train.csv"
commit "b's results and policy"
expect "canned: registered before its results passes" 0
echo "b: seed 2 wins" > "$repo/$R"
record "$repo/policies/preregistration/b.md" preregistered policies/b.json "$R policies/b.train.csv" "most tokens per MWh"
commit "b's rule edited after its results"
expect "canned: a rule edited after registration fails" 1 "'rule' changed after registration"
record "$repo/policies/preregistration/b.md" retrospective policies/b.json "$R policies/b.train.csv"
expect "canned: a registration turned retrospective fails" 1 "registered as preregistered in .*, now retrospective"

new_repo "$tmp/after"
mkdir -p "$repo/policies/preregistration/results"; echo "b: seed 1 wins" > "$repo/$R"
echo 1 > "$repo/policies/b.train.csv"; echo '{}' > "$repo/policies/b.json"
commit "b's results first"
record "$repo/policies/preregistration/b.md" preregistered policies/b.json "$R policies/b.train.csv"
commit "register b after its results"
expect "canned: registered after its results fails" 1 "results came first"

new_repo "$tmp/branch"
main=$(g rev-parse --abbrev-ref HEAD)
g checkout -q -b side
mkdir -p "$repo/policies/preregistration/results"; echo "b: seed 1 wins" > "$repo/$R"
commit "results on a branch forked before the registration"
g checkout -q "$main"
record "$repo/policies/preregistration/b.md" preregistered none "$R"
commit "register b"
g merge -q --no-edit side
expect "canned: results from a branch forked before the registration fail" 1 "does not descend from the registration"

new_repo "$tmp/orphan"
echo '{}' > "$repo/policies/c.json"; commit "c.json, no record"
expect "canned: a policy with no record fails" 1 "policies/c.json is selected by 0 records"
record "$repo/policies/preregistration/c.md" retrospective "policies/c.json policies/a.json" policies/a.train.csv
commit "c's record also selects a.json"
expect "canned: a policy selected twice fails" 1 "policies/a.json is selected by 2 records"

new_repo "$tmp/fields"
sed -i '/^metric:/d' "$repo/policies/preregistration/a.md"
expect "canned: a missing field fails" 1 "field 'metric' missing"
new_repo "$tmp/commits"
sed -i 's/^results-commit: .*/results-commit: 0123456789ab/' "$repo/policies/preregistration/a.md"
expect "canned: an unknown retrospective commit fails" 1 "0123456789ab is not a commit"
new_repo "$tmp/anchors"
echo "the results table" >> "$repo/policies/README.md"; commit "the table, after the listed commits"
sed -i '/^rule-anchor:/{p;s|.*|results-source: policies/README.md|;p;s|.*|results-anchor: the results table|}' \
  "$repo/policies/preregistration/a.md"
expect "canned: a results-anchor outside the results-commits fails" 1 "results-anchor first appears in"
sed -i 's/^rule-anchor: .*/rule-anchor: the results table/' "$repo/policies/preregistration/a.md"
expect "canned: a rule-anchor outside the first rule-commit fails" 1 "rule-anchor first appears in"

repo="$tmp/plain"; mkdir -p "$repo"; cp -r "$tmp/before/policies" "$repo/"
CI='' expect "canned: no git history passes outside CI" 0 "^skip: history checks not run"
CI=true expect "canned: no git history fails under CI=true" 1 "under CI=true the history checks must run"
git clone -q --depth 1 "file://$tmp/before" "$tmp/shallow" 2> /dev/null
repo="$tmp/shallow"
CI='' expect "canned: a shallow clone passes outside CI, saying what it skipped" 0 "^skip: .*shallow clone"
CI=true expect "canned: a shallow clone fails under CI=true" 1 "shallow clone"
finish preregistration
