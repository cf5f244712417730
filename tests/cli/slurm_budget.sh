#!/usr/bin/env bash
# The Slurm job-budget path (deploy/slurm/prolog.sh, epilog.sh) in a fake Slurm environment:
# the agent on the fake NVML library with a token file, SLURM_JOB_* variables and a fake
# `scontrol` on PATH. The prolog starts the agent and sends the job's budget (from the job's
# comment, from scontrol when the environment has none, or FLEXWATT_JOB_BUDGET_W) as
# PUT /v1/budget with the control token; a value that is not a number, a missing token (401)
# and an out-of-range budget (422) are logged as refused and the prolog still exits 0; the
# epilog writes the job's budget account (the agent's status) and stops the agent.
# Usage: slurm_budget.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$(realpath "$1")
src=$2
fake=$(dirname "$bin")/tests/telemetry/fake_nvml/libnvidia-ml.so.1
source "$(dirname "$0")/lib/agent.sh"
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=400
SCRIPT
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
run=$tmp/run/flexwatt logs=$tmp/log/flexwatt
token=slurm-token-0123456789abcdef
printf 'slurm control %s\n' "$token" > "$tmp/tokens"
chmod 600 "$tmp/tokens"
printf '%s\n' "$token" > "$tmp/slurm-token"
cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: uncontrolled
budget_w: 700
restore_file: $run/saved-limits.json
lock_file: $run/agent.lock
server:
  unix_socket: $run/agent.sock
  tcp_port: $port
  token_file: $tmp/tokens
  audit_log: $logs/audit.log
YAML
mkdir -p "$tmp/bin"
cat > "$tmp/bin/scontrol" <<'SH'
#!/bin/sh
# fake scontrol: `show job 42` has the budget in its Extra field
[ "$1 $2 $3" = "show job 42" ] || exit 1
echo "JobId=42 JobName=train"
echo "   Comment=(null) Extra=flexwatt_budget_w=500"
SH
chmod +x "$tmp/bin/scontrol"
export FLEXWATT=$bin FLEXWATT_CONFIG=$tmp/agent.yaml FLEXWATT_RUN_DIR=$run FLEXWATT_LOG_DIR=$logs \
  FLEXWATT_TOKEN_FILE=$tmp/slurm-token
jb=$logs/job-budget.jsonl
status() { curl -s --max-time 2 -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/status"; }
wait_budget() {  # wait_budget W: the loop applies the write at its next tick (<= 3 s)
  for _ in $(seq 30); do [ "$(status | jq '.budget.watts')" = "$1" ] && return 0; sleep 0.1; done
  echo "  budget $(status | jq -c '.budget')"; return 1
}
last() { tail -1 "$jb"; }
prolog() {  # prolog VAR=VALUE...: the prolog in that environment; sets $rc
  env "$@" timeout 30 sh "$src/deploy/slurm/prolog.sh"; rc=$?
}

prolog SLURM_JOB_ID=41 SLURM_JOB_COMMENT="flexwatt_budget_w=650,flexwatt_window_s=10"
check "prolog exits 0" test "$rc" -eq 0
[ -s "$run/agent.pid" ] && track_agent "$(cat "$run/agent.pid")"
check "job 41: the comment's 650 W is the agent's budget ($(last))" wait_budget 650
check "job 41: with its 10 s window" test "$(status | jq '.budget.window_s')" = 10
check "job 41: logged as set (202)" \
  jqt '.job == "41" and .event == "budget_set" and .http_status == "202" and .budget.watts == 650' <(last)
check "the audit log names the token's subject (slurm)" \
  jqt -s 'any(.who == "slurm" and .method == "PUT" and .path == "/v1/budget" and .status == 202)' "$logs/audit.log"

prolog SLURM_JOB_ID=42 PATH="$tmp/bin:$PATH"
check "job 42: 500 W from scontrol's Extra field (rc=$rc)" wait_budget 500
check "job 42: the running agent was left alone (one pid)" test "$(wc -l < "$run/agent.pid")" -eq 1

prolog SLURM_JOB_ID=43 FLEXWATT_JOB_BUDGET_W='650;rm -rf /'
check "job 43: a budget that is not a number: exit 0, refused, nothing sent" \
  jqt '.job == "43" and .event == "budget_refused"' <(last)
prolog SLURM_JOB_ID=44 FLEXWATT_JOB_BUDGET_W=600 FLEXWATT_TOKEN_FILE=
check "job 44: no token: refused with 401 (rc=$rc)" \
  jqt '.job == "44" and .event == "budget_refused" and .http_status == "401"' <(last)
prolog SLURM_JOB_ID=45 FLEXWATT_JOB_BUDGET_W=0.5
check "job 45: 0.5 W: refused with 422 (rc=$rc)" \
  jqt '.job == "45" and .event == "budget_refused" and .http_status == "422"' <(last)
check "every line of job-budget.jsonl is JSON" jq -e . "$jb" >/dev/null
check "the refused ones left 500 W" test "$(status | jq '.budget.watts')" = 500
check "prolog never fails a job (last rc=$rc)" test "$rc" -eq 0

pid=$(cat "$run/agent.pid" 2>/dev/null)
SLURM_JOB_ID=45 timeout 30 sh "$src/deploy/slurm/epilog.sh"
check "epilog exits 0" test $? -eq 0
check "epilog: the job's account (budget 500 W from the API, windows judged)" \
  jqt '.job == "45" and .event == "job_end" and .status.budget.watts == 500
       and .status.budget.source == "api" and (.status.windows[0].violations_total | type) == "number"' <(last)
# (an exited agent may stay a zombie of PID 1 here: gone means an empty cmdline)
check "epilog stopped the agent (pid $pid)" test -z "$(tr -d '\0' < "/proc/$pid/cmdline" 2>/dev/null)"
finish slurm_budget
