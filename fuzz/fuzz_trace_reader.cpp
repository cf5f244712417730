// libFuzzer harness: a flexwatt gpus.csv (or any header TraceReader detects) read row by row,
// then the whole analysis (windows, ticks, sorting fallback) on it.
#include <cstddef>
#include <cstdint>

#include "analysis/trace_analysis.hpp"
#include "fuzz/fuzz_input.hpp"
#include "telemetry/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fw::fuzz::as_file(data, size);
  {
    auto r = fw::TraceReader::open(path);
    if (r.ok()) {
      fw::TraceRow row;
      while ((*r)->next(row)) {
      }
    }
  }
  fw::AnalysisOptions o;
  o.budget_w = 500;
  o.scope = size % 2 ? fw::AnalysisScope::kGpu : fw::AnalysisScope::kNode;
  auto s = fw::analyze_trace(path, o);
  return s.ok() && s->rows < 0;
}
