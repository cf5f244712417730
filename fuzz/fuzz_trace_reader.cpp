// libFuzzer harness: a flexwatt gpus.csv (or any header TraceReader detects) read row by row
// three ways: the reference path (every line through CsvReader, one thread), the in-place
// parser with one thread, and with two threads in small blocks; the rows (bit for bit),
// warnings and final status must be the same (else abort: a crash), and so must the rows the
// two-thread reader hands out in batches (next_batch). Then the whole analysis (windows,
// ticks, sorting fallback) on it.
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

// The columns next_batch hands out (line, GPU, time, power, energy), read by next_batch
// (batch) or by next(), with the warnings and the final status.
std::string batch_transcript(const std::string& path, const fw::TraceReaderOptions& ro,
                             bool batch) {
  auto r = fw::TraceReader::open(path, ro);
  if (!r.ok()) return "open: " + r.status().message();
  std::string out;
  auto add = [&](int64_t line, int gpu, double t, double p, double e) {
    out += std::to_string(line) + ":" + std::to_string(gpu) + ":";
    for (double v : {t, p, e}) put(out, v);
  };
  if (batch) {
    fw::TraceRowBatch b;
    while ((*r)->next_batch(b)) {
      if (b.n == 0) std::abort();  // a batch holds at least one row
      for (size_t i = 0; i < b.n; ++i) {
        add(b.line_base + b.line[i], b.gpu[i], b.time_s[i], b.power_w[i],
            b.energy_j != nullptr ? b.energy_j[i] : fw::kUnset);
      }
    }
  } else {
    fw::TraceRow row;
    while ((*r)->next(row)) {
      add(row.line, row.reading.gpu, row.time_s, row.reading.power_w, row.reading.energy_j);
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
  const std::string want_batch = batch_transcript(path, ref, false);
  if (batch_transcript(path, ro, true) != want_batch) std::abort();  // batches differ from rows
  fw::TraceReaderOptions ref_energy = ref;  // the columns the analysis asks for
  ref_energy.fields = fw::kFieldEnergy;
  ro.fields = fw::kFieldEnergy;
  if (batch_transcript(path, ro, true) != batch_transcript(path, ref_energy, false)) std::abort();
  fw::AnalysisOptions o;
  o.budget_w = 500;
  o.scope = size % 2 ? fw::BudgetScope::kGpu : fw::BudgetScope::kNode;
  auto s = fw::analyze_trace(path, o, ro);
  return s.ok() && s->rows < 0;
}
