#pragma once
// Splitting one CSV line whose fields may hold commas inside double quotes (the Perseus
// artifact's `partition_method` column, "custom:0,8,14,20,26"), which CsvReader does not split
// around. Fields are views into `line`; surrounding spaces and one pair of enclosing quotes are
// trimmed; a doubled quote inside a field is not unescaped (no file read here needs it).

#include <string_view>
#include <vector>

namespace fw {

std::vector<std::string_view> split_quoted_csv_line(std::string_view line);

}  // namespace fw
