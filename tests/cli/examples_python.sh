#!/usr/bin/env bash
# The Python examples when `python3` on PATH is not Debian's (issue #47: a pyenv shim made
# examples/torch_grpo.py say "PyTorch is not installed" although python3-torch was). Two
# interpreters without Debian's site packages, first on PATH as `python3`: a virtualenv (a
# pyvenv.cfg beside a bin/python3 link to /usr/bin/python3, include-system-site-packages false:
# what `python3 -m venv` makes) and a shim script (`exec /usr/bin/python3 -S "$@"`, as pyenv's
# shims exec their own interpreter). Under each, `python3 examples/torch_grpo.py --offline`
# must train its steps (exit 0, one JSON line per step) by running itself again under
# /usr/bin/python3, and say so on stderr naming /usr/bin/python3. When no interpreter it may
# use has torch (FLEXWATT_TORCH_PYTHON pointing at the virtualenv's), it exits 3 with a message
# naming /usr/bin/python3 and python3-torch, and runs nothing. examples/grpo_loop.py needs no
# torch: it starts under the virtualenv's python3 (--help). Under CI=true a missing PyTorch
# fails the test.
# Usage: examples_python.sh FLEXWATT_BIN SOURCE_DIR
set -u
src=$2
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
tmp=
scratch_dir tmp
if ! [ -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  need_tool "PyTorch for /usr/bin/python3 (Debian package python3-torch)"
fi
command -v jq >/dev/null || need_tool jq

mkdir -p "$tmp/venv/bin" "$tmp/shim"
ln -s /usr/bin/python3 "$tmp/venv/bin/python3"
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' > "$tmp/venv/pyvenv.cfg"
printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' > "$tmp/shim/python3"
chmod +x "$tmp/shim/python3"
check "the virtualenv's python3 cannot import torch" \
  bash -c "! '$tmp/venv/bin/python3' -c 'import torch' 2>/dev/null"
check "the shim's python3 cannot import torch" \
  bash -c "! '$tmp/shim/python3' -c 'import torch' 2>/dev/null"

steps=2
for kind in venv shim; do
  dir=$tmp/shim
  [ $kind = venv ] && dir=$tmp/venv/bin
  rm -f "$tmp/out" "$tmp/err"
  (cd "$tmp" && env -u FLEXWATT_TORCH_PYTHON -u FLEXWATT_TORCH_REEXEC PATH="$dir:$PATH" \
    timeout 120 python3 "$src/examples/torch_grpo.py" --offline --steps $steps --prompts 2 \
    --gen-len 4 --gen-concurrency 4 --group-size 2 >"$tmp/out" 2>"$tmp/err")
  rc=$?
  check "$kind: torch_grpo.py exits 0 (exit $rc)" test $rc -eq 0
  check "$kind: $steps JSON step lines on stdout" \
    test "$(jq -c 'select(.reward_mean != null)' "$tmp/out" 2>/dev/null | wc -l)" -eq $steps
  check "$kind: stderr says it runs under /usr/bin/python3" \
    grep -q "PyTorch is not importable by .*; running under /usr/bin/python3" "$tmp/err"
  [ "$fails" -eq 0 ] || { echo "--- $kind stderr"; tail -5 "$tmp/err"; }
done

# No interpreter with torch: exit 3, the message names Debian's interpreter, nothing runs.
FLEXWATT_TORCH_PYTHON=$tmp/venv/bin/python3 timeout 60 "$tmp/venv/bin/python3" \
  "$src/examples/torch_grpo.py" --offline --steps 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "no torch anywhere: exit 3 (exit $rc)" test $rc -eq 3
check "no torch anywhere: the message says to run /usr/bin/python3" \
  grep -q "run /usr/bin/python3 examples/torch_grpo.py" "$tmp/err"
check "no torch anywhere: the message names python3-torch" grep -q "python3-torch" "$tmp/err"
check "no torch anywhere: nothing on stdout" test ! -s "$tmp/out"
# The re-executed process never executes again (FLEXWATT_TORCH_REEXEC set): exit 3, no loop.
FLEXWATT_TORCH_REEXEC=1 timeout 60 "$tmp/venv/bin/python3" "$src/examples/torch_grpo.py" \
  --offline --steps 1 >/dev/null 2>"$tmp/err"
rc=$?
check "already re-executed: exit 3, no second exec (exit $rc)" test $rc -eq 3

# grpo_loop.py: the standard library only, any python3.
"$tmp/venv/bin/python3" "$src/examples/grpo_loop.py" --help >"$tmp/out" 2>&1
check "grpo_loop.py starts under the virtualenv's python3 (--help)" grep -q -- "--steps" "$tmp/out"
finish examples_python
