#include "control/recorder.hpp"

namespace fw {

Result<std::unique_ptr<Recorder>> Recorder::create(const std::string& dir) {
  FW_ASSIGN_OR_RETURN(auto w, TraceWriter::create(dir));
  return std::unique_ptr<Recorder>(new Recorder(std::move(w)));
}

}  // namespace fw
