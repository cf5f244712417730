#pragma once
// Shared by the importer tests (nvidia-smi, dcgmi dmon): write a log's text to a temporary
// file, open it with the trace reader, and collect everything a test checks. The reader must
// detect the expected format (a gtest expectation otherwise).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "telemetry/trace_reader.hpp"

namespace fw::testing {

struct ImportRead {
  Status status;  // of open(), else of the last next()
  std::vector<TraceRow> rows;
  nlohmann::json meta;
  int64_t missing = 0;
  std::vector<std::string> warnings;
};

// `text` written to <temp dir>/<name> and read through in full with options `o`.
inline ImportRead read_import(const std::string& name, const std::string& text,
                              const TraceReaderOptions& o, TraceFormat want) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  ImportRead out;
  auto r = TraceReader::open(p.string(), o);
  if (!r.ok()) {
    out.status = r.status();
    return out;
  }
  EXPECT_EQ((*r)->format(), want);
  TraceRow row;
  while ((*r)->next(row)) out.rows.push_back(row);
  out.status = (*r)->status();
  out.meta = (*r)->meta();
  out.missing = (*r)->missing_power_rows();
  out.warnings = (*r)->warnings();
  return out;
}

}  // namespace fw::testing
