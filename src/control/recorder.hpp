#pragma once
// Recorder: writes an episode's trace directory (format: docs/telemetry.md "Trace format") with
// fw::TraceWriter. Optional in the loop; failures surface at close(). Not thread-safe.
// Rows reach the files as TraceWriterOptions say: for a real-time loop (the agent)
// TraceWriterOptions::real_time(), within 1 s of trace time (the snapshots' time_s; no clock is
// read here), one write(2) per file and no fsync, so a kill -9 leaves the trace up to then;
// by default (simulated runs) at close() and per 1 MiB.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw {

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> create(const std::string& dir,
                                                  TraceWriterOptions options = {});
  void record(const Snapshot& s) { writer_->append(s); }
  // Every recorded row to the kernel now (an exit path that cannot close()).
  void flush() { writer_->flush(); }
  // Writes meta.json (scenario, seed, controller, … as the caller gives them).
  Status close(const nlohmann::json& meta) { return writer_->close(meta); }
  const std::string& dir() const { return writer_->dir(); }

 private:
  explicit Recorder(std::unique_ptr<TraceWriter> w) : writer_(std::move(w)) {}
  std::unique_ptr<TraceWriter> writer_;
};

}  // namespace fw
