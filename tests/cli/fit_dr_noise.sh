#!/usr/bin/env bash
# End-to-end: scripts/fit_dr_noise.py (issue 45) runs on the shipped field data and prints the
# fit; the numbers the C++ carries agree with it: the field-calibrated defaults
# (src/studies/dr_event.hpp), the shipped replays' per-job noise and dips
# (scenarios/dr/*.yaml) and the site sd the plant test calibrates against
# (tests/studies/dr_noise_test.cpp). Then `dr replay --noise quiet|field` on a short event.
# Usage: bash fit_dr_noise.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
command -v python3 >/dev/null || need_tool python3

check "fit runs" python3 "$src/scripts/fit_dr_noise.py" >"$out/fit.txt"
for want in "site sd of 1-minute means (APS, both spans)" "jobs combined as independent" \
  "noise_frac_1min (default" "site-common component" "noise_tau_s <" "dips: period 3600 s" \
  "defaults (src/studies/dr_event.hpp)"; do
  grep -qF "$want" "$out/fit.txt" ||
    { echo "FAIL: the fit's text lacks '$want'"; fails=$((fails + 1)); }
done
check "fit --json" python3 "$src/scripts/fit_dr_noise.py" --json >"$out/fit.json"
check "fit again" python3 "$src/scripts/fit_dr_noise.py" --json >"$out/fit2.json"
check "the fit is reproducible" cmp -s "$out/fit.json" "$out/fit2.json"
# The project's shared copy of the data (the calibration source), where this checkout has one:
# the same fit.
shared=$src/../shared/data/emerald-phoenix
if [ -f "$shared/aps_job_power_w.csv" ]; then
  check "the shared copy's fit" python3 "$src/scripts/fit_dr_noise.py" --json \
    --data-dir "$shared" >"$out/fit3.json"
  cmp -s <(jq 'del(.data_dir)' "$out/fit.json") <(jq 'del(.data_dir)' "$out/fit3.json") ||
    { echo "FAIL: the shared copy gives another fit"; fails=$((fails + 1)); }
fi

# The C++ and the scenarios against the fit (python: the header's constants, the YAML's keys).
check "the C++ carries the fit" python3 - "$out/fit.json" "$src" <<'PY'
import json, re, sys
fit = json.load(open(sys.argv[1]))
src = sys.argv[2]
bad = []
hdr = open(src + "/src/studies/dr_event.hpp").read()
def const(name):
    m = re.search(r"inline constexpr double %s = ([0-9.eE+-]+);" % name, hdr)
    return float(m.group(1)) if m else None
d = fit["defaults"]
for cname, key in (("kDrFieldNoiseFrac1min", "noise_frac_1min"), ("kDrNoiseTauS", "noise_tau_s"),
                   ("kDrFieldDipPeriodS", "dip_period_s"),
                   ("kDrFieldDipDurationS", "dip_duration_s"), ("kDrFieldDipLevel", "dip_level")):
    if const(cname) != d[key]:
        bad.append("%s = %s, the fit says %s" % (cname, const(cname), d[key]))
if d["site_common_sd_frac"] != 0 and "site_common" not in hdr:
    bad.append("the fit has a site-common component (%s) the plant does not model"
               % d["site_common_sd_frac"])
t = open(src + "/tests/studies/dr_noise_test.cpp").read()
m = re.search(r"constexpr double kFieldSiteSd = ([0-9.]+);", t)
if not m or abs(float(m.group(1)) - round(fit["fit"]["site_sd_frac_aps"], 5)) > 1e-12:
    bad.append("dr_noise_test.cpp kFieldSiteSd %s, the fit %.5f"
               % (m and m.group(1), fit["fit"]["site_sd_frac_aps"]))
for scen in ("aps-2025-05-01", "caiso-reenactment"):
    y = open(src + "/scenarios/dr/%s.yaml" % scen).read()
    for name, v in fit["per_job_defaults"].items():
        short = name if name.startswith("infer") else name.rsplit("-", 1)[0]
        m = re.search(r"\{name: %s,(.*?)\}\}?\n" % re.escape(short), y, re.S)
        if not m:
            bad.append("%s: no job %s" % (scen, short)); continue
        body = m.group(1)
        nf = re.search(r"noise_frac_1min: ([0-9.]+)", body)
        if not nf or float(nf.group(1)) != v["noise_frac_1min"]:
            bad.append("%s %s noise_frac_1min %s, the fit %s"
                       % (scen, short, nf and nf.group(1), v["noise_frac_1min"]))
        if "dip_duration_s" in v:
            dd = re.search(r"duration_s: ([0-9.]+), level: ([0-9.]+)", body)
            if not dd or float(dd.group(1)) != v["dip_duration_s"] or \
                    float(dd.group(2)) != d["dip_level"]:
                bad.append("%s %s dips %s, the fit %s s at %s" % (
                    scen, short, dd and dd.groups(), v["dip_duration_s"], d["dip_level"]))
            if scen.startswith("aps"):
                ph = re.search(r"phase_s: ([0-9.]+)", body)
                if not ph or float(ph.group(1)) != v["dip_phase_s"]:
                    bad.append("%s %s phase_s %s, the fit %s"
                               % (scen, short, ph and ph.group(1), v["dip_phase_s"]))
        elif "dips: none" not in body:
            bad.append("%s %s: the fit has no dips for it, the scenario does" % (scen, short))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

# --noise on a short event: quiet has no dips and the old noise; field differs; bad value exit 2.
cat >"$out/e.yaml" <<YAML
sample_period_s: 0.5
duration_s: 2400
baseline_w: measured
jobs:
  - {name: ft, gpus: 32, sweep_csv: $src/data/a100_power_cap_sweep.csv, sweep_job: ft_llama_8b_dolly, tier_min: 0.75}
event:
  steps:
    - {start_s: 600, ramp_s: 300, depth: 0.2}
  end_s: 1800
  release_ramp_s: 300
YAML
check "replay field" "$bin" dr replay "$out/e.yaml" --json --quiet >"$out/field.json"
check "replay quiet" "$bin" dr replay "$out/e.yaml" --json --quiet --noise quiet >"$out/quiet.json"
cmp -s "$out/field.json" "$out/quiet.json" &&
  { echo "FAIL: --noise quiet gives the field's replay"; fails=$((fails + 1)); }
sed -i '1i noise: quiet' "$out/e.yaml"
check "noise: quiet in the file" "$bin" dr replay "$out/e.yaml" --json --quiet >"$out/quiet2.json"
check "the key and the flag agree" cmp -s "$out/quiet.json" "$out/quiet2.json"
expect_exit2 "bad --noise" "--noise: loud not in" dr replay "$out/e.yaml" --noise loud
finish fit_dr_noise
