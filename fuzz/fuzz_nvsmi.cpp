// libFuzzer harness: the nvidia-smi importer. The first byte picks --nvsmi-gpus (0 = detect,
// else 1..64 or out of range), the rest is the log; then the analysis runs on it.
#include <cstddef>
#include <cstdint>

#include "analysis/trace_analysis.hpp"
#include "fuzz/fuzz_input.hpp"
#include "telemetry/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  fw::TraceReaderOptions ro;
  ro.nvsmi_gpus_per_tick = data[0] < 128 ? 0 : data[0] - 128;  // 0..127: 65.. out of range
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
