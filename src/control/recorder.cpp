#include "control/recorder.hpp"

namespace fw {

Result<std::unique_ptr<Recorder>> Recorder::create(const std::string& dir,
                                                   TraceWriterOptions options) {
  FW_ASSIGN_OR_RETURN(auto w, TraceWriter::create(dir, options));
  return std::unique_ptr<Recorder>(new Recorder(std::move(w)));
}

}  // namespace fw
