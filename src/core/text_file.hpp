#pragma once
// Whole text files: reading one (a model, a scenario) with an error for every way it can fail,
// and writing one (a report, a table, a JSON result) without leaving a torn one.
//
// Contract: read_text_file() returns the file's bytes; NotFound when `path` does not exist,
// InvalidArgument when it is a directory or holds more than max_bytes (a device such as
// /dev/zero, or the wrong file: refused instead of read until memory runs out), kIoError when
// it cannot be read (each naming the path). Pipes are read like files. It never throws (a
// stream over a directory does, deep in the standard library).
// write_text_file() writes `text` to `path` through a temporary file in the same
// directory and renames it into place, so a reader sees either the old file or the whole new
// one. A failure is a Status naming the path (kIoError); the temporary file is removed.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace fw {

// Largest input read_text_file takes by default: every scenario, config, policy and model
// flexwatt reads is far smaller (a policy is ~100 KB).
inline constexpr size_t kMaxTextFileBytes = size_t{64} << 20;

Result<std::string> read_text_file(const std::string& path, size_t max_bytes = kMaxTextFileBytes);

Status write_text_file(const std::string& path, std::string_view text);

// Ok when the directory `path` would be written in exists and is writable: lets a verb refuse
// a bad output path before a long run instead of after it. kIoError naming the path otherwise.
Status check_writable_parent(const std::string& path);

}  // namespace fw
