#pragma once
// Streaming CSV reader and buffered writer for traces (millions of rows).
//
// CsvReader memory-maps a regular file (read-only, sequential advice) and hands out each row
// as string_views into the mapping; other files (pipes) are read in large blocks into its own
// buffer; there a line longer than 16 MiB (a device such as /dev/zero, binary data) stops the
// reader with an error instead of growing the buffer without end. No allocation per field or
// per row once warmed up. Views are valid until the next
// call to next(). Fields are split on ','; surrounding spaces
// and one pair of double quotes are trimmed. Embedded commas inside quotes are not
// supported (no trace format here needs them). Blank lines are skipped. A UTF-8 byte-order
// mark at the start of the file is skipped; CRLF line ends read like LF. A last line without
// a terminating newline (a log still being written) is returned like any other row, with
// unterminated() true, so the caller can drop it with a warning.
// Thread-safety: none; one reader per thread.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace fw {

// Parses a decimal floating-point number (the whole view, spaces trimmed).
// Returns false on anything else, including an empty view. "nan"/"inf" parse.
bool parse_double(std::string_view s, double& out);
// Parses a comma-separated list of numbers into `out` (cleared first); an item that is not a
// number is InvalidArgument "<flag>: not a number: '<item>'".
Status parse_double_list(std::string_view s, std::string_view flag, std::vector<double>& out);
// Parses a base-10 integer (the whole view, spaces trimmed).
bool parse_int64(std::string_view s, int64_t& out);
std::string_view trim(std::string_view s);
// `s` with ASCII letters lowered (header names, GPU names, job names compared case-blind).
std::string ascii_lower(std::string_view s);

class CsvReader {
 public:
  static Result<std::unique_ptr<CsvReader>> open(const std::string& path);
  // A reader over bytes owned by the caller (a slice of another reader's mapping, starting at
  // a line start), whose first line is line first_line of `path` (for messages).
  static std::unique_ptr<CsvReader> over(std::string path, std::string_view bytes,
                                         int64_t first_line);
  // The whole file when memory-mapped (else empty), and the offset in it just after the
  // current row.
  std::string_view mapped() const { return map_ ? std::string_view(map_, map_size_) : ""; }
  size_t offset() const { return begin_; }
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  // Advances to the next non-blank row. Returns false at end of file or on a read
  // error (then status() is not ok).
  bool next();
  // Fields of the current row.
  const std::vector<std::string_view>& fields() const { return fields_; }
  std::string_view line() const { return line_; }
  // 1-based line number of the current row in the file.
  int64_t line_number() const { return line_no_; }
  const std::string& path() const { return path_; }
  // True when the current row is the file's last line and has no newline after it.
  bool unterminated() const { return unterminated_; }
  // "path:line" of the current row, for error messages.
  std::string where() const;
  const Status& status() const { return status_; }

 private:
  explicit CsvReader(std::string path, std::FILE* f);
  CsvReader() = default;
  bool fill();
  const char* base() const { return map_ ? map_ : buf_.data(); }

  std::string path_;
  std::FILE* file_ = nullptr;
  const char* map_ = nullptr;  // the whole file when memory-mapped (or the slice of over())
  size_t map_size_ = 0;
  bool owns_map_ = true;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  bool eof_ = false;
  bool at_start_ = true;  // no byte handed out yet (BOM check)
  bool unterminated_ = false;
  std::string_view line_;
  std::vector<std::string_view> fields_;
  int64_t line_no_ = 0;
  Status status_;
};

// Buffered writer. Numbers are written in the shortest form that reads back exactly,
// or with fixed decimals when asked. close() reports any write error.
class CsvWriter {
 public:
  static Result<std::unique_ptr<CsvWriter>> create(const std::string& path);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  CsvWriter& field(std::string_view s);
  CsvWriter& field(double v);
  CsvWriter& field(double v, int decimals);
  CsvWriter& field(int64_t v);
  CsvWriter& field(int v) { return field(static_cast<int64_t>(v)); }
  // A reading with fixed decimals, or an empty cell when it is missing (NaN).
  CsvWriter& cell(double v, int decimals) {
    return std::isnan(v) ? field(std::string_view()) : field(v, decimals);
  }
  void end_row();
  // Writes a whole header row from comma-separated names.
  void header(std::string_view comma_separated);
  Status close();
  // Hands the buffered rows to the kernel now (one fwrite + fflush; no fsync), so a reader or
  // a crash sees them. Call between rows. Errors are reported by close().
  void flush();

 private:
  CsvWriter(std::string path, std::FILE* f);
  void sep();
  void flush_if_full();

  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buf_;
  bool row_started_ = false;
  bool failed_ = false;
};

}  // namespace fw
