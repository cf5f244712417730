#include "agent/trace_rotation.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "agent/agent_log.hpp"

namespace fw::agent {
namespace {

// The highest N of the seg-N directories in `dir` (0 when none).
int last_trace_segment(const std::string& dir) {
  int last = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 10 || name.rfind("seg-", 0) != 0) continue;
    if (name.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    last = std::max(last, std::stoi(name.substr(4)));
  }
  return last;
}

}  // namespace

TraceRotation::TraceRotation(std::string dir, int64_t rotate_ticks, int keep,
                             std::function<nlohmann::json()> meta)
    : dir_(std::move(dir)), rotate_ticks_(rotate_ticks), keep_(keep), meta_(std::move(meta)) {}

TraceRotation::~TraceRotation() {
  if (closer_.joinable()) closer_.join();
}

void TraceRotation::open() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  segment_ = last_trace_segment(dir_);  // a restart continues, never overwrites
  rotate();
}

bool TraceRotation::tick() {
  if (!recorder_ || ++ticks_ < rotate_ticks_) return false;
  rotate();
  return true;
}

void TraceRotation::rotate() {
  std::unique_ptr<Recorder> done = std::move(recorder_);
  const nlohmann::json meta = meta_();
  char name[32];
  std::snprintf(name, sizeof name, "seg-%06d", ++segment_);
  auto r = Recorder::create(dir_ + "/" + name, TraceWriterOptions::real_time());
  if (r.ok()) {
    recorder_ = std::move(r).value();
  } else {
    log_line("trace: " + r.status().message());
  }
  ticks_ = 0;
  std::string doomed;
  if (segment_ > keep_) {
    std::snprintf(name, sizeof name, "seg-%06d", segment_ - keep_);
    doomed = dir_ + "/" + name;
  }
  if (closer_.joinable()) closer_.join();  // the previous rotation's: long done
  closer_ = std::thread([done = std::move(done), meta, doomed] {
    if (done) {
      Status s = done->close(meta);
      if (!s.ok()) log_line("trace: " + s.message());
    }
    std::error_code ec;
    if (!doomed.empty()) std::filesystem::remove_all(doomed, ec);
  });
}

void TraceRotation::close() {
  if (closer_.joinable()) closer_.join();
  if (recorder_) {
    (void)recorder_->close(meta_());
    recorder_.reset();
  }
}

}  // namespace fw::agent
