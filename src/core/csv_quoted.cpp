#include "core/csv_quoted.hpp"

#include "core/csv.hpp"

namespace fw {

std::vector<std::string_view> split_quoted_csv_line(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      std::string_view f = trim(line.substr(start, i - start));
      if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
      out.push_back(f);
      start = i + 1;
    }
  }
  return out;
}

}  // namespace fw
