// libFuzzer harness: a flexwatt gpus.csv (or any header TraceReader detects) read row by row,
// by one thread or (every third input) by two threads in small blocks, then the whole
// analysis (windows, ticks, sorting fallback) on it.
#include <cstddef>
#include <cstdint>

#include "analysis/trace_analysis.hpp"
#include "fuzz/fuzz_input.hpp"
#include "telemetry/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fw::fuzz::as_file(data, size);
  fw::TraceReaderOptions ro;
  ro.parallel_parse = size % 3 == 0;
  ro.parallel_min_bytes = 1;
  ro.parallel_block_bytes = 1 + size % 61;
  {
    auto r = fw::TraceReader::open(path, ro);
    if (r.ok()) {
      fw::TraceRow row;
      while ((*r)->next(row)) {
      }
    }
  }
  fw::AnalysisOptions o;
  o.budget_w = 500;
  o.scope = size % 2 ? fw::AnalysisScope::kGpu : fw::AnalysisScope::kNode;
  auto s = fw::analyze_trace(path, o, ro);
  return s.ok() && s->rows < 0;
}
