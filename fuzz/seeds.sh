#!/usr/bin/env bash
# Seed corpus from the repository's test inputs: fuzz/seeds.sh OUT_DIR writes
# OUT_DIR/<harness>/ (kept small: heads of the example traces, every scenario, the policies).
set -eu
cd "$(dirname "$0")/.."
out=$1
mkdir -p "$out"/{fuzz_csv,fuzz_trace_reader,fuzz_nvsmi,fuzz_scenario,fuzz_policy}
head -40 data/examples/trace/gpus.csv > "$out/fuzz_csv/gpus_head.csv"
head -40 data/examples/trace/gpus.csv > "$out/fuzz_trace_reader/gpus_head.csv"
printf 'time_s,gpu,power_w\n0,0,100\n0.5,0,101\n0,1,100\n0.5,1,99\n' > "$out/fuzz_trace_reader/unsorted.csv"
printf '\xEF\xBB\xBFtime_s,gpu,power_w\r\n0,0,1\r\ntime_s,gpu,power_w\r\n1,0,2\r\n2,0,3' \
  > "$out/fuzz_trace_reader/as_is.csv"
head -80 data/examples/nvsmi_8gpu.csv > "$out/fuzz_csv/nvsmi_head.csv"
# nvidia-smi harness: first byte = --nvsmi-gpus choice (0x00: detect, 0x88: 8).
{ printf '\x00'; head -120 data/examples/nvsmi_8gpu.csv; } > "$out/fuzz_nvsmi/detect.csv"
{ printf '\x88'; head -120 data/examples/nvsmi_8gpu.csv; } > "$out/fuzz_nvsmi/given8.csv"
{ printf '\x00'; head -1 data/examples/nvsmi_8gpu.csv; sed -n '3,60p' data/examples/nvsmi_8gpu.csv; } \
  > "$out/fuzz_nvsmi/trimmed.csv"
printf '\x00timestamp, index, pci.bus_id, power.draw [W], energy [mJ]\n2025/07/26 23:32:09.703, 0, 00000000:07:00.0, 0.3 kW, 5\n2025/07/26 23:32:09.803, 1, 00000000:1B:00.0, [N/A], 6\n' \
  > "$out/fuzz_nvsmi/units.csv"
# dcgmi dmon output: with a period (first byte odd) and with a leading time column (even).
printf '\x01#Entity   POWER     TOTEC\nID\nGPU 0     245.3     1000000\nGPU 1     N/A       2000000\n#Entity   POWER     TOTEC\nID\nGPU 0     250.0     1125000\nGPU 1     260       N/A\n' \
  > "$out/fuzz_nvsmi/dmon_period.txt"
printf '\x00100.0 #Entity POWER\n100.0 ID\n100.1 GPU 0 100\n100.1 GPU 1 200\n100.6 GPU 0 110\n100.6 GPU 1 210\n' \
  > "$out/fuzz_nvsmi/dmon_time.txt"
for f in scenarios/*.yaml; do cp "$f" "$out/fuzz_scenario/"; done
for f in policies/*.json; do
  [ "$(stat -c %s "$f")" -le 200000 ] && cp "$f" "$out/fuzz_policy/"
done
true
