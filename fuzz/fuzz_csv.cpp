// libFuzzer harness: fw::CsvReader on arbitrary bytes (rows, fields, BOM, partial last line).
#include <cstddef>
#include <cstdint>

#include "core/csv.hpp"
#include "fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = fw::CsvReader::open(fw::fuzz::as_file(data, size));
  if (!r.ok()) return 0;
  size_t fields = 0;
  while ((*r)->next()) {
    for (std::string_view f : (*r)->fields()) {
      double d;
      int64_t i;
      fields += fw::parse_double(f, d) + fw::parse_int64(f, i);
    }
  }
  return fields == static_cast<size_t>(-1);
}
