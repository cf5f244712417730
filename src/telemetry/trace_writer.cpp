#include "telemetry/trace_writer.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/text_file.hpp"
#include "telemetry/reading_ranges.hpp"

namespace fw {

// One CSV file of the trace: rows are formatted into a buffer (the bytes of CsvWriter:
// fixed decimals by std::to_chars, "nan" for a NaN) and handed to the kernel by flush() with
// one fwrite + fflush, or when 1 MiB is buffered. close() reports the first write error.
class TraceWriter::File {
 public:
  static Result<std::unique_ptr<File>> create(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return Status::IoError(path + ": cannot create: " + std::strerror(errno));
    return std::unique_ptr<File>(new File(path, f));
  }
  ~File() { (void)close(); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  File& field(std::string_view s) {
    sep();
    buf_.append(s);
    return *this;
  }
  File& field(double v, int decimals) {
    sep();
    if (std::isnan(v)) {
      buf_.append("nan");
      return *this;
    }
    char tmp[64];
    auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::fixed, decimals);
    buf_.append(tmp, p);
    return *this;
  }
  File& field(int64_t v) {
    sep();
    char tmp[24];
    auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, p);
    return *this;
  }
  // A reading with fixed decimals, or an empty cell when it is missing.
  File& cell(double v, int decimals) {
    return std::isnan(v) ? field(std::string_view()) : field(v, decimals);
  }
  void end_row() {
    buf_.push_back('\n');
    row_started_ = false;
    if (buf_.size() >= kBlock) write_out();
  }
  void header(std::string_view names) {
    buf_.append(names);
    end_row();
  }
  void flush() {
    if (buf_.empty() || !file_) return;
    write_out();
    if (std::fflush(file_) != 0) failed_ = true;
  }
  Status close() {
    if (file_) {
      write_out();
      if (std::fclose(file_) != 0) failed_ = true;
      file_ = nullptr;
    }
    return failed_ ? Status::IoError(path_ + ": write failed") : Status::Ok();
  }

 private:
  static constexpr size_t kBlock = 1 << 20;
  File(std::string path, std::FILE* f) : path_(std::move(path)), file_(f) {
    buf_.reserve(kBlock + 4096);
  }
  void sep() {
    if (row_started_) buf_.push_back(',');
    row_started_ = true;
  }
  // Whole rows only: called at a row's end or with no row started.
  void write_out() {
    if (buf_.empty() || !file_) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) failed_ = true;
    buf_.clear();
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buf_;
  bool row_started_ = false;
  bool failed_ = false;
};

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
  FW_ASSIGN_OR_RETURN(t->gpus_, File::create(dir + "/gpus.csv"));
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
    File& w = *gpus_;
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
    auto j = File::create(dir_ + "/jobs.csv");
    if (!j.ok()) {
      if (pending_.ok()) pending_ = j.status();
      return;
    }
    jobs_ = std::move(j).value();
    jobs_->header(jobs_csv_header());
  }
  for (const JobReading& j : s.jobs) {
    File& w = *jobs_;
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
