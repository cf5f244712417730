// libFuzzer harness: the nvidia-smi and dcgmi dmon importers. The first byte picks
// --nvsmi-gpus (0 = detect, else 1..64 or out of range) and, by its lowest bit,
// --dmon-period-s (odd: 0.5 s, even: none); the rest is the log; then the analysis runs on it.
#include <cstddef>
#include <cstdint>

#include "analysis/trace_analysis.hpp"
#include "fuzz/fuzz_input.hpp"
#include "telemetry/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  fw::TraceReaderOptions ro;
  ro.nvsmi_gpus_per_tick = data[0] < 128 ? 0 : data[0] - 128;  // 0..127: 65.. out of range
  ro.dmon_period_s = (data[0] & 1) ? 0.5 : fw::kUnset;
  const std::string path = fw::fuzz::as_file(data + 1, size - 1);
  {
    auto r = fw::TraceReader::open(path, ro);
    if (r.ok()) {
      fw::TraceRow row;
      while ((*r)->next(row)) {
      }
    }
  }
  fw::AnalysisOptions o;
  o.budget_w = 5000;
  auto s = fw::analyze_trace(path, o, ro);
  return s.ok() && s->rows < 0;
}
