#include "telemetry/trace_writer.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/csv.hpp"
#include "core/text_file.hpp"
#include "telemetry/reading_ranges.hpp"

namespace fw {

std::string jobs_csv_header() {
  std::string h = "time_s,job,phase,tokens_total,steps_total";
  for (std::string_view k : kKnobNames) (h += ',') += k;
  return h;
}

TraceWriter::TraceWriter(std::string dir, TraceWriterOptions options)
    : dir_(std::move(dir)), options_(options), last_flush_s_(kUnset) {}

TraceWriter::~TraceWriter() = default;

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& dir,
                                                         TraceWriterOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create directory: " + ec.message());
  std::unique_ptr<TraceWriter> t(new TraceWriter(dir, options));
  FW_ASSIGN_OR_RETURN(t->gpus_, CsvWriter::create(dir + "/gpus.csv"));
  t->gpus_->header(kGpusCsvHeader);
  return t;
}

void TraceWriter::flush() {
  gpus_->flush();
  if (jobs_) jobs_->flush();
}

void TraceWriter::append(const Snapshot& s) {
  for (GpuReading g : s.gpus) {
    if (!in_sane_range(ReadingField::kPower, g.power_w) ||
        !in_sane_range(ReadingField::kPower, g.power_instant_w)) {
      ++implausible_rows_;
      continue;
    }
    const std::pair<double*, ReadingField> checked[] = {
        {&g.energy_j, ReadingField::kEnergy},    {&g.cap_w, ReadingField::kCap},
        {&g.sm_util, ReadingField::kUtil},       {&g.mem_util, ReadingField::kUtil},
        {&g.sm_clock_mhz, ReadingField::kClock}, {&g.temp_c, ReadingField::kTemp}};
    for (const auto& [value, field] : checked) {
      if (!in_sane_range(field, *value)) {
        *value = kUnset;
        ++implausible_fields_;
      }
    }
    CsvWriter& w = *gpus_;
    w.field(s.time_s, 3).field(static_cast<int64_t>(g.gpu));
    w.cell(g.power_w, 2).cell(g.energy_j, 3).cell(g.cap_w, 1).cell(g.sm_util, 3);
    w.cell(g.mem_util, 3).cell(g.sm_clock_mhz, 0).cell(g.temp_c, 1);
    w.end_row();
  }
  append_jobs(s);
  if (std::isinf(options_.flush_every_s)) return;
  // Not "elapsed >= period": that is false for NaN (the first snapshot: flushed at once) and
  // for a clock that went back (flushed, and counted from there).
  const double elapsed_s = s.time_s - last_flush_s_;
  if (!(elapsed_s >= 0 && elapsed_s < options_.flush_every_s - kFlushSlack_s)) {
    flush();
    last_flush_s_ = s.time_s;
  }
}

void TraceWriter::append_jobs(const Snapshot& s) {
  if (s.jobs.empty()) return;
  if (!jobs_) {
    auto j = CsvWriter::create(dir_ + "/jobs.csv");
    if (!j.ok()) {
      if (pending_.ok()) pending_ = j.status();
      return;
    }
    jobs_ = std::move(j).value();
    jobs_->header(jobs_csv_header());
  }
  for (const JobReading& j : s.jobs) {
    CsvWriter& w = *jobs_;
    w.field(s.time_s, 3).field(static_cast<int64_t>(j.job)).field(phase_name(j.phase));
    w.cell(j.tokens_total, 0).cell(j.steps_total, 0);
    for (double k : j.knobs) w.cell(k, 0);
    w.end_row();
  }
}

Status TraceWriter::close(const nlohmann::json& meta) {
  FW_RETURN_IF_ERROR(pending_);
  FW_RETURN_IF_ERROR(gpus_->close());
  if (jobs_) FW_RETURN_IF_ERROR(jobs_->close());
  nlohmann::json m = meta;
  m["format"] = "flexwatt-trace/1";
  if (implausible_rows_ + implausible_fields_ > 0) {
    m["implausible_rows"] = implausible_rows_;
    m["implausible_fields"] = implausible_fields_;
  }
  return write_text_file(dir_ + "/meta.json", m.dump(2) + "\n");
}

}  // namespace fw
