// `analyze` throughput on a generated 10-million-row gpus.csv, beside a split pass: a read of
// the same file with fw::CsvReader that splits rows into fields and parses nothing. The split
// pass is not the I/O floor (reading the bytes): bench/analyze_vs_pandas.py times that (cat)
// and pandas. Prints rows/s of each and the ratio analyze/split. A third benchmark times the
// analysis alone, over the rows already parsed and held in memory.
//
// The trace (8 GPUs at 0.1 s, all nine gpus.csv columns, as TraceWriter writes them) is
// generated once, deterministically (seeded), under $TMPDIR/flexwatt_bench/ and reused by
// later runs. FLEXWATT_BENCH_ROWS overrides the row count (e.g. for a quick run).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "analysis/trace_analysis.hpp"
#include "core/csv.hpp"
#include "core/rng.hpp"
#include "telemetry/trace_reader.hpp"
#include "telemetry/trace_writer.hpp"

namespace {

namespace fs = std::filesystem;

int64_t bench_rows() {
  const char* e = std::getenv("FLEXWATT_BENCH_ROWS");
  return e ? std::max<int64_t>(8, std::atoll(e)) : 10'000'000;
}

// Returns the trace directory, generating it when missing or of another size.
const std::string& trace_dir() {
  static const std::string dir = [] {
    const int64_t rows = bench_rows();
    const fs::path d = fs::temp_directory_path() / "flexwatt_bench" / std::to_string(rows);
    const fs::path stamp = d / "complete";
    if (fs::exists(stamp)) return d.string();
    std::fprintf(stderr, "generating %lld-row trace in %s ...\n", static_cast<long long>(rows),
                 d.c_str());
    fs::remove_all(d);
    auto w = fw::TraceWriter::create(d.string());
    if (!w.ok()) {
      std::fprintf(stderr, "%s\n", w.status().message().c_str());
      std::exit(1);
    }
    fw::Rng rng(20250726);
    constexpr int kGpus = 8;
    fw::Snapshot s;
    s.gpus.resize(kGpus);
    std::vector<double> energy(kGpus, 0.0);
    for (int64_t tick = 0; tick * kGpus < rows; ++tick) {
      s.time_s = 0.1 * static_cast<double>(tick);
      const bool busy = (tick / 150) % 4 != 0;  // 15 s cycles: 45 s busy, 15 s light
      for (int g = 0; g < kGpus; ++g) {
        fw::GpuReading& r = s.gpus[g];
        r.gpu = g;
        r.power_w = (busy ? 530.0 : 250.0) + 45.0 * rng.uniform();
        energy[g] += r.power_w * 0.1;
        r.energy_j = energy[g];
        r.cap_w = 700;
        r.sm_util = busy ? 0.95 : 0.3;
        r.mem_util = busy ? 0.6 : 0.2;
        r.sm_clock_mhz = busy ? 1980 : 1410;
        r.temp_c = busy ? 71 : 55;
      }
      (*w)->append(s);
    }
    if (fw::Status st = (*w)->close({{"generator", "bench/analyze_bench.cpp"}}); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      std::exit(1);
    }
    std::ofstream(stamp) << rows << "\n";
    return d.string();
  }();
  return dir;
}

double g_read_s = std::numeric_limits<double>::infinity();
double g_analyze_s = std::numeric_limits<double>::infinity();
int64_t g_rows = 0;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_ReadFloor(benchmark::State& state) {
  const std::string path = trace_dir() + "/gpus.csv";
  int64_t rows = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = fw::CsvReader::open(path);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    rows = 0;
    size_t fields = 0;
    while ((*r)->next()) {
      fields += (*r)->fields().size();
      ++rows;
    }
    benchmark::DoNotOptimize(fields);
    --rows;  // header
    g_read_s = std::min(g_read_s, seconds_since(t0));
  }
  g_rows = rows;
  state.counters["rows_per_s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Analyze(benchmark::State& state) {
  fw::AnalysisOptions o;
  o.budget_w = 8 * 500.0;
  o.windows_s = {0.5, 10, 30, 300};
  int64_t rows = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = fw::analyze_trace(trace_dir(), o);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    rows = r->rows;
    benchmark::DoNotOptimize(r->node.energy_j);
    g_analyze_s = std::min(g_analyze_s, seconds_since(t0));
  }
  state.counters["rows_per_s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsIterationInvariantRate);
}

// The analysis alone (TraceAnalyzer over rows already parsed, held in memory as columns; one
// thread), the same options as BM_Analyze: what analyze costs beyond reading the file.
void BM_AnalysisOnly(benchmark::State& state) {
  fw::AnalysisOptions o;
  o.budget_w = 8 * 500.0;
  o.windows_s = {0.5, 10, 30, 300};
  fw::TraceReaderOptions ro;
  ro.fields = fw::kFieldEnergy;
  auto reader = fw::TraceReader::open(trace_dir(), ro);
  if (!reader.ok()) {
    state.SkipWithError(reader.status().message().c_str());
    return;
  }
  std::vector<double> time_s, power_w, energy_j;
  std::vector<int32_t> gpu, line;
  fw::TraceRowBatch b;
  while ((*reader)->next_batch(b)) {
    time_s.insert(time_s.end(), b.time_s, b.time_s + b.n);
    power_w.insert(power_w.end(), b.power_w, b.power_w + b.n);
    energy_j.insert(energy_j.end(), b.energy_j, b.energy_j + b.n);
    gpu.insert(gpu.end(), b.gpu, b.gpu + b.n);
    line.insert(line.end(), b.line, b.line + b.n);  // relative lines: messages only
  }
  constexpr size_t kBlock = 65536;
  for (auto _ : state) {
    fw::TraceAnalyzer an(o, "gpus.csv", false);
    for (size_t i = 0; i < time_s.size(); i += kBlock) {
      fw::TraceRowBatch in;
      in.n = std::min(kBlock, time_s.size() - i);
      in.time_s = time_s.data() + i;
      in.power_w = power_w.data() + i;
      in.energy_j = energy_j.data() + i;
      in.gpu = gpu.data() + i;
      in.line = line.data() + i;
      if (!an.add_batch(in)) {
        state.SkipWithError(an.status().message().c_str());
        return;
      }
    }
    auto r = an.finish();
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->node.energy_j);
  }
  state.counters["rows_per_s"] = benchmark::Counter(static_cast<double>(time_s.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_row"] = benchmark::Counter(
      static_cast<double>(time_s.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}

BENCHMARK(BM_ReadFloor)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_AnalysisOnly)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  trace_dir();  // generate before timing
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (std::isfinite(g_read_s) && std::isfinite(g_analyze_s) && g_rows > 0) {
    std::printf(
        "analyze throughput: %.3g rows/s; CsvReader split pass: %.3g rows/s; analyze/split "
        "time ratio %.2f (best of 3 each, %lld rows; the I/O floor: analyze_vs_pandas.py)\n",
        static_cast<double>(g_rows) / g_analyze_s, static_cast<double>(g_rows) / g_read_s,
        g_analyze_s / g_read_s, static_cast<long long>(g_rows));
  }
  return 0;
}
