// libFuzzer harness: a flexwatt gpus.csv (or any header TraceReader detects) read row by row
// three ways: the reference path (every line through CsvReader, one thread), the in-place
// parser with one thread, and with two threads in small blocks; the rows (bit for bit),
// warnings and final status must be the same (else abort: a crash). Then the whole analysis
// (windows, ticks, sorting fallback) on it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "analysis/trace_analysis.hpp"
#include "fuzz/fuzz_input.hpp"
#include "telemetry/trace_reader.hpp"

namespace {

void put(std::string& out, double v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

std::string transcript(const std::string& path, const fw::TraceReaderOptions& ro) {
  auto r = fw::TraceReader::open(path, ro);
  if (!r.ok()) return "open: " + r.status().message();
  std::string out;
  fw::TraceRow row;
  while ((*r)->next(row)) {
    const fw::GpuReading& g = row.reading;
    out += std::to_string(row.line) + ":" + std::to_string(g.gpu) + ":";
    for (double v : {row.time_s, g.power_w, g.power_instant_w, g.energy_j, g.cap_w, g.sm_util,
                     g.mem_util, g.sm_clock_mhz, g.temp_c}) {
      put(out, v);
    }
  }
  for (const std::string& w : (*r)->warnings()) out += "\nwarning " + w;
  return out + "\nstatus " + (*r)->status().message();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fw::fuzz::as_file(data, size);
  fw::TraceReaderOptions ref;
  ref.in_place = false;
  ref.parse_threads = 1;
  const std::string want = transcript(path, ref);
  fw::TraceReaderOptions ro;
  ro.parse_threads = 1;
  if (transcript(path, ro) != want) std::abort();  // in-place parser differs from the reference
  ro.parse_threads = 2;
  ro.parallel_min_bytes = 1;
  ro.parallel_block_bytes = 1 + size % 61;
  if (transcript(path, ro) != want) std::abort();  // two threads differ from one
  fw::AnalysisOptions o;
  o.budget_w = 500;
  o.scope = size % 2 ? fw::BudgetScope::kGpu : fw::BudgetScope::kNode;
  auto s = fw::analyze_trace(path, o, ro);
  return s.ok() && s->rows < 0;
}
