#pragma once
// Writing a whole output file (a report, a table, a JSON result) without leaving a torn one.
//
// Contract: write_text_file() writes `text` to `path` through a temporary file in the same
// directory and renames it into place, so a reader sees either the old file or the whole new
// one. A failure is a Status naming the path (kIoError); the temporary file is removed.

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace fw {

Status write_text_file(const std::string& path, std::string_view text);

// Ok when the directory `path` would be written in exists and is writable: lets a verb refuse
// a bad output path before a long run instead of after it. kIoError naming the path otherwise.
Status check_writable_parent(const std::string& path);

}  // namespace fw
