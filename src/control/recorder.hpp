#pragma once
// Recorder: writes an episode's trace directory (format: docs/telemetry.md "Trace format") with
// fw::TraceWriter. Optional in the loop; failures surface at close(). Not thread-safe.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw {

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> create(const std::string& dir);
  void record(const Snapshot& s) { writer_->append(s); }
  // Writes meta.json (scenario, seed, controller, … as the caller gives them).
  Status close(const nlohmann::json& meta) { return writer_->close(meta); }
  const std::string& dir() const { return writer_->dir(); }

 private:
  explicit Recorder(std::unique_ptr<TraceWriter> w) : writer_(std::move(w)) {}
  std::unique_ptr<TraceWriter> writer_;
};

}  // namespace fw
