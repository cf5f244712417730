// libFuzzer harness: scenario YAML (sim::parse_scenario, validation included). Exceptions
// escaping the parser are findings (the loader must return a Status).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = fw::sim::parse_scenario(text, "fuzz.yaml", {});
  return s.ok() && s->duration_s < 0;
}
