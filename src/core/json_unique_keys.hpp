#pragma once
// Parsing JSON that names no key twice in one object. RFC 8259 leaves such an object's meaning
// to the reader: nlohmann::json keeps the last value silently, other readers (a proxy, an
// audit-log reader, a client library) the first, so {"watts": 600, "watts": 1} means 1 W to
// one and 600 W to another. An API that acts on a body refuses it instead.
//
// parse_json_unique_keys(text, duplicate): the parsed value, or a discarded one
// (is_discarded()) when `text` is not JSON or an object in it repeats a key; in the latter
// case *duplicate is the path of the first repeated key, members joined by '.' and array
// elements as [i] ("schedule[1].after_s", "knobs.gen_concurrency.min"), and it is empty
// otherwise (a parse error wins over a repeated key before it). Throws only what allocation
// throws. Pure and thread-safe.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fw {

inline nlohmann::json parse_json_unique_keys(std::string_view text, std::string* duplicate) {
  using nlohmann::json;
  struct Frame {
    bool object = false;
    std::string path;  // how this object or array is reached ("" at the top)
    std::set<std::string> keys;
    std::string last_key;  // object: the member being parsed
    size_t index = 0;      // array: the element being parsed
  };
  std::vector<Frame> stack;
  std::string first_dup;
  // The path of the value that starts now, under the innermost open object or array.
  auto child_path = [&stack]() -> std::string {
    if (stack.empty()) return {};
    Frame& f = stack.back();
    if (f.object) return f.path.empty() ? f.last_key : f.path + "." + f.last_key;
    return f.path + "[" + std::to_string(f.index++) + "]";
  };
  json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        Frame f;
        f.object = event == json::parse_event_t::object_start;
        f.path = child_path();
        stack.push_back(std::move(f));
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key:
        if (!stack.empty() && parsed.is_string()) {
          Frame& f = stack.back();
          f.last_key = parsed.get<std::string>();
          if (!f.keys.insert(f.last_key).second && first_dup.empty()) {
            first_dup = f.path.empty() ? f.last_key : f.path + "." + f.last_key;
          }
        }
        break;
      case json::parse_event_t::value:  // a number, string, bool or null
        if (!stack.empty() && !stack.back().object) ++stack.back().index;
        break;
    }
    return true;
  };
  json out = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (duplicate) *duplicate = out.is_discarded() ? std::string() : first_dup;
  if (!first_dup.empty()) return json(json::value_t::discarded);
  return out;
}

}  // namespace fw
