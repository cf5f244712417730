// libFuzzer harness: a learned policy file (rl::Policy::from_json on parsed JSON; the JSON
// parser's own exceptions are expected input errors, anything else is a finding).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "rl/policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  auto p = fw::rl::Policy::from_json(j);
  return !p.ok() && p.status().message().empty();
}
