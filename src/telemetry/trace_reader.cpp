#include "telemetry/trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/csv.hpp"
#include "core/format.hpp"
#include "core/json_int.hpp"
#include "telemetry/dmon_import.hpp"
#include "telemetry/nvsmi_import.hpp"
#include "telemetry/trace_reader_parse.hpp"

namespace fw {
namespace {

using trace_internal::fast_parse_double;
using trace_internal::fast_parse_int;
using trace_internal::separators64;

std::string fmt_num(double v) { return format_g(v); }

Status bad(const CsvReader& r, std::string_view field, const std::string& problem) {
  return Status::InvalidArgument(r.where() + ": " + std::string(field) + ": " + problem);
}

// Set of allowed GPU indices; empty = any.
std::vector<char> allowed_table(const std::vector<int>& gpus) {
  std::vector<char> t;
  for (int g : gpus) {
    if (g < 0 || g > kMaxGpuIndex) continue;
    if (static_cast<size_t>(g) >= t.size()) t.resize(g + 1, 0);
    t[g] = 1;
  }
  return t;
}

// A compressed file: its format and the command that prints it decompressed.
struct Compression {
  const char* name;
  const char* cat;
};

// The compression format whose magic bytes start the file, or nullptr.
const Compression* compression_of(std::string_view head) {
  static constexpr Compression kGzip{"gzip", "zcat"}, kZstd{"zstd", "zstdcat"}, kXz{"xz", "xzcat"},
      kBzip2{"bzip2", "bzcat"};
  auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  if (starts("\x1f\x8b")) return &kGzip;
  if (starts("\x28\xb5\x2f\xfd")) return &kZstd;
  if (starts(std::string_view("\xfd"
                              "7zXZ\0",
                              6)))
    return &kXz;
  if (starts("BZh") && head.size() > 3 && head[3] >= '1' && head[3] <= '9') return &kBzip2;
  return nullptr;
}

// Text for a message: bytes outside printable ASCII as '?', at most max_chars (then "...").
std::string printable(std::string_view s, size_t max_chars) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

std::string list_str(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// An optional column of gpus.csv parsed into a GpuReading member, with its sane range.
struct Optional {
  int col;
  double GpuReading::*member;
  const char* name;
  ReadingField field;
  double lo, hi;
};

// cols: time, gpu, power, energy, limit, sm_util, mem_util, clock, temp (−1 = absent). Splits
// the optional members into those parsed (present and asked for in `fields`) and those left
// unset (NaN).
void split_optional(const std::vector<int>& cols, unsigned fields, Optional (&parsed)[6],
                    int& n_parsed, double GpuReading::* (&unset)[6], int& n_unset) {
  static constexpr unsigned kBits[] = {
      0,         0, 0, kFieldEnergy, kFieldPowerLimit, kFieldSmUtil, kFieldMemUtil, kFieldSmClock,
      kFieldTemp};
  static constexpr const char* kNames[] = {
      "", "", "", "energy_j", "power_limit_w", "sm_util", "mem_util", "sm_clock_mhz", "temp_c"};
  static constexpr ReadingField kFields[] = {
      ReadingField::kPower,  ReadingField::kPower, ReadingField::kPower,
      ReadingField::kEnergy, ReadingField::kCap,   ReadingField::kUtil,
      ReadingField::kUtil,   ReadingField::kClock, ReadingField::kTemp};
  static constexpr double GpuReading::*kMembers[] = {nullptr,
                                                     nullptr,
                                                     nullptr,
                                                     &GpuReading::energy_j,
                                                     &GpuReading::cap_w,
                                                     &GpuReading::sm_util,
                                                     &GpuReading::mem_util,
                                                     &GpuReading::sm_clock_mhz,
                                                     &GpuReading::temp_c};
  n_parsed = n_unset = 0;
  for (int i = 3; i < 9; ++i) {
    if (cols[i] >= 0 && (fields & kBits[i])) {
      Optional& o = parsed[n_parsed++];
      o = {cols[i], kMembers[i], kNames[i], kFields[i], 0, 0};
      sane_range(o.field, o.lo, o.hi);
    } else {
      unset[n_unset++] = kMembers[i];
    }
  }
}

// Rows in columns (a vector per column), as the block parser fills them: time, power, the
// parsed optional members (in the order of the source's optional list), the GPU index and the
// line.
struct RowColumns {
  std::vector<double> time_s, power_w;
  std::vector<double> optional[6];
  std::vector<int32_t> gpu, line;

  size_t size() const { return time_s.size(); }
  void clear(size_t reserve_rows, int n_optional) {
    time_s.clear();
    power_w.clear();
    gpu.clear();
    line.clear();
    time_s.reserve(reserve_rows);
    power_w.reserve(reserve_rows);
    gpu.reserve(reserve_rows);
    line.reserve(reserve_rows);
    for (int i = 0; i < n_optional; ++i) {
      optional[i].clear();
      optional[i].reserve(reserve_rows);
    }
  }
  void push(double t, double p, int g, const double* opt, int n_optional, int64_t line_no) {
    time_s.push_back(t);
    power_w.push_back(p);
    for (int i = 0; i < n_optional; ++i) optional[i].push_back(opt[i]);
    gpu.push_back(g);
    line.push_back(static_cast<int32_t>(line_no));
  }
};

// The flexwatt gpus.csv format, columns by header name.
//
// Over a memory-mapped file (or a slice of one, or a buffer) the common line is parsed in
// place in one pass: fields split on ',' and the needed columns read as plain decimals, no
// per-row allocation. Any line that is not plain (spaces, quotes, exponents, long mantissas,
// too few fields, blank, the unterminated last line, a value the checks reject) is read again
// by the exact path (a CsvReader over that one line, then from_fields), which gives the rows,
// errors and warnings of the CsvReader path byte for byte.
class FlexwattSource : public TraceRowSource {
 public:
  FlexwattSource(std::unique_ptr<CsvReader> r, std::vector<int> cols, unsigned fields,
                 const std::vector<int>& known, std::string header_line, bool in_place = true)
      : r_(std::move(r)),
        header_line_(std::move(header_line)),
        allowed_(allowed_table(known)),
        known_(known) {
    // cols: time, gpu, power, energy, limit, sm_util, mem_util, clock, temp (−1 = absent)
    for (int i = 0; i < 3; ++i) col_[i] = cols[i];
    split_optional(cols, fields, optional_, n_optional_, unset_, n_unset_);
    for (int c : cols) min_fields_ = std::max(min_fields_, c + 1);
    role_.assign(min_fields_, kSkip);
    for (int i = 0; i < 3; ++i) role_[col_[i]] = static_cast<signed char>(i);
    for (int i = 0; i < n_optional_; ++i) role_[optional_[i].col] = static_cast<signed char>(3 + i);
    const std::string_view m = r_->mapped();
    if (!m.empty() && in_place) {
      fast_ = true;
      base_ = m.data();
      pos_ = r_->offset();
      end_ = m.size();
      line_ = r_->line_number();
    }
  }

  bool next(TraceRow& row) override {
    if (!status_.ok()) return false;
    if (fast_) return next_mapped(row);
    do {
      if (!r_->next()) {
        status_ = r_->status();
        return false;
      }
    } while (skip_non_data(*r_, header_line_));
    return from_fields(*r_, row);
  }
  const Status& status() const override { return status_; }
  int64_t lines_read() const { return fast_ ? line_ : r_->line_number(); }

  // Appends every remaining row to c (the rows next() would give, in order); stops at the
  // end or at the first error (status()).
  void read_columns(RowColumns& c) {
    TraceRow row;
    if (!fast_) {
      while (next(row)) push_row(row, c);
      return;
    }
    PlainRow pr;
    while (const int k = next_line(pr, row)) {
      if (k == 1) {
        c.push(pr.time_s, pr.power_w, pr.gpu, pr.optional, n_optional_, line_);
      } else {
        push_row(row, c);
      }
    }
  }

 private:
  static constexpr signed char kSkip = -1;

  // A line parsed in place: time, power, GPU and the parsed optional members (optional_
  // order).
  struct PlainRow {
    double time_s = 0, power_w = 0;
    int gpu = 0;
    double optional[6] = {};
  };

  bool fail(Status s) {
    status_ = std::move(s);
    return false;
  }

  void push_row(const TraceRow& row, RowColumns& c) const {
    double opt[6];
    for (int i = 0; i < n_optional_; ++i) opt[i] = row.reading.*optional_[i].member;
    c.push(row.time_s, row.reading.power_w, row.reading.gpu, opt, n_optional_, row.line);
  }

  // The next row of the mapped bytes: 1 when parsed in place (into pr, its line line_), 2 when
  // read by the exact path (into row), 0 at the end or on an error (status_).
  __attribute__((always_inline)) int next_line(PlainRow& pr, TraceRow& row) {
    while (status_.ok() && pos_ < end_) {
      const char* const p = base_ + pos_;
      ++line_;
      if (const size_t n = parse_plain(p, base_ + end_, pr)) {
        pos_ += n;
        return 1;
      }
      if (exact_line(p, row)) return 2;
    }
    return 0;
  }

  bool next_mapped(TraceRow& row) {
    PlainRow pr;
    const int k = next_line(pr, row);
    if (k != 1) return k == 2;
    GpuReading& rd = row.reading;
    row.time_s = pr.time_s;
    row.line = line_;
    rd.gpu = pr.gpu;
    rd.power_w = pr.power_w;
    rd.power_instant_w = kUnset;
    for (int i = 0; i < n_optional_; ++i) rd.*optional_[i].member = pr.optional[i];
    for (int i = 0; i < n_unset_; ++i) rd.*unset_[i] = kUnset;
    return true;
  }

  // The line at p (line_ already counted) through the exact path: true with row filled, or
  // false when the line is not data (blank, the partial last line, a repeated header; pos_
  // moves past it) or on an error (status_ set).
  bool exact_line(const char* p, TraceRow& row) {
    const char* const e = base_ + end_;
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(e - p));
    const size_t len =
        nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) + 1 : static_cast<size_t>(e - p);
    pos_ += len;
    std::unique_ptr<CsvReader> one = CsvReader::over(r_->path(), std::string_view(p, len), line_);
    if (!one->next()) {  // blank line
      if (!one->status().ok()) fail(one->status());
      return false;
    }
    if (skip_non_data(*one, header_line_)) return false;
    return from_fields(*one, row);
  }

  // Same bytes in [a, a + n) and time_text_ (n ≤ sizeof time_text_); never for empty text
  // (time_text_len_ 0 means no time cached). e: the end of the readable bytes from a (two
  // 8-byte compares when 16 bytes are readable and n <= 16).
  bool same_time_text(const char* a, size_t n, const char* e) const {
    if (n != time_text_len_ || n == 0) return false;
    if (n <= 16 && e - a >= 16) {
      uint64_t x[2], y[2];
      std::memcpy(x, a, 16);
      std::memcpy(y, time_text_, 16);
      const uint64_t m0 = n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
      const uint64_t m1 = n <= 8 ? 0 : n >= 16 ? ~uint64_t{0} : (uint64_t{1} << (8 * (n - 8))) - 1;
      return (((x[0] ^ y[0]) & m0) | ((x[1] ^ y[1]) & m1)) == 0;
    }
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != time_text_[i]) return false;
    }
    return true;
  }

  // One plain line at line (end of the bytes e) into out: returns its length with the '\n',
  // or 0 when the exact path must read it (see the class comment).
  size_t parse_plain(const char* const line, const char* const e, PlainRow& out) {
    const char* chunk = line;
    uint64_t nl = 0;
    uint64_t mask = separators64(chunk, e, nl);
    const char* p = line;  // start of the current field
    const char* q = e;     // its separator (or e)
    for (int c = 0; c < min_fields_; ++c) {
      while (mask == 0) {
        chunk += 64;
        if (chunk >= e) break;
        mask = separators64(chunk, e, nl);
      }
      if (mask == 0) return 0;  // no separator: the unterminated last line
      q = chunk + __builtin_ctzll(mask);
      mask &= mask - 1;
      const char* const s = p;
      const int role = role_[c];
      if (role != kSkip) {
        const char* fe = q;
        if (*fe == '\n' && fe > s && fe[-1] == '\r') --fe;  // CRLF
        if (role == 0) {
          const size_t n = static_cast<size_t>(fe - s);
          if (same_time_text(s, n, e)) {
            out.time_s = time_value_;
          } else {
            double t;
            if (!trace_internal::plain_decimal(s, fe, t) || std::fabs(t) > kMaxTraceTimeS) {
              return 0;
            }
            out.time_s = t;
            if (n <= sizeof time_text_) {
              std::memcpy(time_text_, s, n);
              time_text_len_ = n;
              time_value_ = t;
            }
          }
        } else if (role == 1) {
          if (s == fe || fe - s > 4) return 0;
          int g = 0;
          for (const char* d = s; d < fe; ++d) {
            const unsigned v = static_cast<unsigned>(*d - '0');
            if (v >= 10u) return 0;
            g = g * 10 + static_cast<int>(v);
          }
          if (g > kMaxGpuIndex) return 0;
          if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
            return 0;
          }
          out.gpu = g;
        } else if (role == 2) {
          if (*s == '-' || !trace_internal::plain_decimal(s, fe, out.power_w) ||
              out.power_w > kMaxGpuPowerW) {
            return 0;
          }
        } else {
          double& v = out.optional[role - 3];
          const Optional& o = optional_[role - 3];
          if (s == fe) {
            v = kUnset;
          } else if (!trace_internal::plain_decimal(s, fe, v) || v < o.lo || v > o.hi) {
            return 0;
          }
        }
      }
      if (*q == '\n') {
        if (c + 1 < min_fields_) return 0;  // too few fields
        break;
      }
      p = q + 1;
    }
    if (*q != '\n') {  // more fields: the end of the line, from the newline bits
      nl &= ~uint64_t{0} << (q - chunk);
      while (nl == 0) {
        chunk += 64;
        if (chunk >= e) return 0;  // the unterminated last line
        separators64(chunk, e, nl);
      }
      q = chunk + __builtin_ctzll(nl);
    }
    return static_cast<size_t>(q - line) + 1;
  }

  // The checked row from a CsvReader's fields (the exact path).
  bool from_fields(const CsvReader& r, TraceRow& row) {
    const std::vector<std::string_view>& f = r.fields();
    if (static_cast<int>(f.size()) < min_fields_) {
      return fail(bad(r, "row",
                      "expected at least " + std::to_string(min_fields_) + " fields, got " +
                          std::to_string(f.size())));
    }
    row.line = r.line_number();
    // Rows of one tick repeat the same time text: parse it once per tick.
    const std::string_view tc = f[col_[0]];
    if (tc.size() <= sizeof time_text_ && same_time_text(tc.data(), tc.size(), tc.data())) {
      row.time_s = time_value_;
    } else {
      if (!fast_parse_double(tc, row.time_s) || !std::isfinite(row.time_s)) {
        time_text_len_ = 0;
        return fail(bad(r, "time_s", "not a finite number: '" + std::string(tc) + "'"));
      }
      if (std::fabs(row.time_s) > kMaxTraceTimeS) {
        time_text_len_ = 0;
        return fail(
            bad(r, "time_s", "'" + std::string(tc) + "' is beyond the sane range of +-1e10 s"));
      }
      if (tc.size() <= sizeof time_text_) {
        std::memcpy(time_text_, tc.data(), tc.size());
        time_text_len_ = tc.size();
        time_value_ = row.time_s;
      }
    }
    int64_t g;
    if (!fast_parse_int(f[col_[1]], g)) {
      return fail(bad(r, "gpu", "not an integer: '" + std::string(f[col_[1]]) + "'"));
    }
    if (g < 0 || g > kMaxGpuIndex) {
      return fail(
          bad(r, "gpu",
              "index " + std::to_string(g) + " out of range 0.." + std::to_string(kMaxGpuIndex)));
    }
    if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
      return fail(
          bad(r, "gpu",
              "unknown GPU index " + std::to_string(g) + " (known: " + list_str(known_) + ")"));
    }
    GpuReading& rd = row.reading;
    rd.gpu = static_cast<int>(g);
    double p;
    std::string_view pc = f[col_[2]];
    if (!fast_parse_double(pc, p)) {
      return fail(bad(r, "power_w", "not a number: '" + std::string(pc) + "'"));
    }
    if (std::isnan(p)) return fail(bad(r, "power_w", "NaN"));
    if (p < 0) return fail(bad(r, "power_w", "negative (" + std::string(pc) + ")"));
    if (!std::isfinite(p)) return fail(bad(r, "power_w", "infinite"));
    if (!in_sane_range(ReadingField::kPower, p)) {
      return fail(bad(r, "power_w", range_problem(ReadingField::kPower, p)));
    }
    rd.power_w = p;
    rd.power_instant_w = kUnset;
    for (int i = 0; i < n_unset_; ++i) rd.*unset_[i] = kUnset;
    for (int i = 0; i < n_optional_; ++i) {
      const Optional& o = optional_[i];
      std::string_view c = f[o.col];
      if (c.empty()) {
        rd.*o.member = kUnset;
      } else if (!fast_parse_double(c, rd.*o.member)) {
        return fail(bad(r, o.name, "not a number: '" + std::string(c) + "'"));
      } else if (!in_sane_range(o.field, rd.*o.member)) {
        return fail(bad(r, o.name, range_problem(o.field, rd.*o.member)));
      }
    }
    return true;
  }

  std::unique_ptr<CsvReader> r_;
  std::string header_line_;
  int col_[3];
  Optional optional_[6];
  int n_optional_ = 0;
  double GpuReading::*unset_[6];
  int n_unset_ = 0;
  int min_fields_ = 0;
  std::vector<signed char> role_;  // per column < min_fields_: kSkip, 0 time, 1 gpu, 2 power,
                                   // 3 + i optional_[i]
  char time_text_[32] = {};
  size_t time_text_len_ = 0;
  double time_value_ = 0;
  std::vector<char> allowed_;
  std::vector<int> known_;
  // The in-place path over mapped bytes base_[pos_, end_); line_ = lines consumed.
  bool fast_ = false;
  const char* base_ = nullptr;
  size_t pos_ = 0, end_ = 0;
  int64_t line_ = 0;
  Status status_;
};

// The flexwatt format over a large memory-mapped file, parsed in blocks by two threads: a
// worker parses blocks ahead (at most kAhead), each into columns, while the caller's thread
// takes rows in file order (one at a time, or a block's columns at once with next_batch),
// parsing a block itself when the worker has not claimed it. Rows, errors and warnings come
// out exactly as from one FlexwattSource over the whole file (errors name absolute lines: each
// block knows its first line from a newline count).
class ChunkedFlexwattSource : public TraceRowSource {
 public:
  static constexpr int kAhead = 4;

  ChunkedFlexwattSource(std::unique_ptr<CsvReader> r, std::vector<int> cols, unsigned fields,
                        const std::vector<int>& known, size_t block_bytes, bool in_place)
      : whole_(std::move(r)),
        in_place_(in_place),
        cols_(std::move(cols)),
        fields_(fields),
        known_(known),
        header_(whole_->line()) {
    split_optional(cols_, fields_, optional_, n_optional_, unset_, n_unset_);
    for (int i = 0; i < n_optional_; ++i) {
      if (optional_[i].member == &GpuReading::energy_j) energy_ = i;
    }
    block_bytes = std::min(block_bytes, size_t{1} << 30);  // lines in a block fit int32_t
    const std::string_view all = whole_->mapped();
    size_t pos = whole_->offset();
    line_base_ = whole_->line_number();
    while (pos < all.size()) {
      size_t end = std::min(all.size(), pos + std::max<size_t>(1, block_bytes));
      if (end < all.size()) {
        const void* nl = std::memchr(all.data() + end, '\n', all.size() - end);
        end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - all.data()) + 1 : all.size();
      }
      blocks_.emplace_back();
      blocks_.back().bytes = all.substr(pos, end - pos);
      pos = end;
    }
    worker_ = std::thread([this] { work(); });
  }
  ~ChunkedFlexwattSource() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  bool next(TraceRow& row) override {
    while (ready()) {
      const Block& b = blocks_[cur_];
      if (i_ < b.cols.size()) {
        const RowColumns& c = b.cols;
        GpuReading& rd = row.reading;
        row.time_s = c.time_s[i_];
        rd.power_w = c.power_w[i_];
        rd.power_instant_w = kUnset;
        for (int i = 0; i < n_optional_; ++i) rd.*optional_[i].member = c.optional[i][i_];
        for (int i = 0; i < n_unset_; ++i) rd.*unset_[i] = kUnset;
        rd.gpu = c.gpu[i_];
        row.line = c.line[i_] + line_base_;
        ++i_;
        return true;
      }
      if (!finish_block()) return false;
    }
    return false;
  }

  bool next_batch(TraceRowBatch& batch) override {
    while (ready()) {
      const Block& b = blocks_[cur_];
      if (i_ < b.cols.size()) {
        const RowColumns& c = b.cols;
        batch.n = b.cols.size() - i_;
        batch.time_s = c.time_s.data() + i_;
        batch.power_w = c.power_w.data() + i_;
        batch.energy_j = energy_ >= 0 ? c.optional[energy_].data() + i_ : nullptr;
        batch.gpu = c.gpu.data() + i_;
        batch.line = c.line.data() + i_;
        batch.line_base = line_base_;
        i_ = b.cols.size();
        return true;
      }
      if (!finish_block()) return false;
    }
    return false;
  }
  const Status& status() const override { return status_; }

 private:
  struct Block {
    std::string_view bytes;
    int64_t lines = 0;  // lines in the block
    RowColumns cols;
    Status status;
    std::vector<std::string> warnings;
    int state = 0;  // 0 unclaimed, 1 being parsed, 2 done (guarded by mu_)
  };

  // The block being handed out is parsed (taking it first when needed); false at the end.
  bool ready() {
    if (cur_ >= blocks_.size()) return false;
    if (!taken_) take(cur_);
    return true;
  }

  // The block handed out is finished: its warnings, then its status; moves to the next block.
  // False on an error (the reader stops).
  bool finish_block() {
    Block& b = blocks_[cur_];
    for (std::string& w : b.warnings) warn(shift_line(w));
    if (!b.status.ok()) {
      status_ = Status::InvalidArgument(shift_line(b.status.message()));
      {
        std::lock_guard<std::mutex> lk(mu_);
        cur_ = blocks_.size();
        stop_ = true;
      }
      cv_.notify_all();
      return false;
    }
    line_base_ += b.lines;
    {
      std::lock_guard<std::mutex> lk(mu_);
      pool_.push_back(std::move(b.cols));
      ++cur_;
    }
    cv_.notify_all();
    i_ = 0;
    taken_ = false;
    return true;
  }

  void parse(Block& b) {
    FlexwattSource src(CsvReader::over(whole_->path(), b.bytes, 1), cols_, fields_, known_, header_,
                       in_place_);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!pool_.empty()) {
        b.cols = std::move(pool_.back());
        pool_.pop_back();
      }
    }
    b.cols.clear(b.bytes.size() / 48, n_optional_);
    src.read_columns(b.cols);
    b.status = src.status();
    b.warnings = src.warnings();
    b.lines = src.lines_read();
  }

  // "path:L: ..." of a block → "path:(L + line_base_): ...".
  std::string shift_line(const std::string& m) const {
    const std::string prefix = whole_->path() + ":";
    if (m.compare(0, prefix.size(), prefix) != 0) return m;
    size_t e = prefix.size();
    int64_t l = 0;
    while (e < m.size() && m[e] >= '0' && m[e] <= '9') l = l * 10 + (m[e++] - '0');
    if (e == prefix.size()) return m;
    return prefix + std::to_string(l + line_base_) + m.substr(e);
  }

  // Waits for block k to be parsed (by the worker) or parses it here; while the worker is on
  // it, parses a later unclaimed block (within kAhead) instead of idling.
  void take(size_t k) {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      size_t j = k;
      while (j < blocks_.size() && j < k + kAhead && blocks_[j].state != 0) ++j;
      if (blocks_[k].state == 2 || j >= blocks_.size() || j >= k + kAhead) break;
      if (j != k && blocks_[k].state == 0) j = k;
      blocks_[j].state = 1;
      lk.unlock();
      parse(blocks_[j]);
      lk.lock();
      blocks_[j].state = 2;
      cv_.notify_all();
      if (j == k) break;
    }
    cv_.wait(lk, [&] { return blocks_[k].state == 2; });
    taken_ = true;
  }

  void work() {
    std::unique_lock<std::mutex> lk(mu_);
    for (size_t k = 0; k < blocks_.size(); ++k) {
      cv_.wait(lk, [&] { return stop_ || k < cur_ + kAhead; });
      if (stop_) return;
      if (blocks_[k].state != 0) continue;
      blocks_[k].state = 1;
      lk.unlock();
      parse(blocks_[k]);
      lk.lock();
      blocks_[k].state = 2;
      cv_.notify_all();
    }
  }

  std::unique_ptr<CsvReader> whole_;  // owns the mapping the blocks view
  bool in_place_;
  std::vector<int> cols_;
  unsigned fields_;
  std::vector<int> known_;
  std::string header_;
  std::vector<Block> blocks_;
  Optional optional_[6];
  int n_optional_ = 0;
  double GpuReading::*unset_[6];
  int n_unset_ = 0;
  int energy_ = -1;  // energy_j's index in optional_, or -1 when not parsed
  // Row buffers of blocks already handed out, reused (guarded by mu_).
  std::vector<RowColumns> pool_;
  int64_t line_base_ = 0;   // lines of the file before blocks_[cur_]
  size_t cur_ = 0, i_ = 0;  // block being handed out (guarded by mu_ for the worker), row
  bool taken_ = false;      // blocks_[cur_] is parsed and being handed out
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread worker_;
  Status status_;
};

// Parse threads for a flexwatt file of mapped_bytes (0 when not mapped): see
// TraceReaderOptions::parse_threads.
int parse_threads(const TraceReaderOptions& o, size_t mapped_bytes) {
  int n = o.parse_threads;
  if (n == 0) {
    const char* env = std::getenv("FLEXWATT_PARSE_THREADS");
    if (env != nullptr && (std::string(env) == "1" || std::string(env) == "2")) {
      n = env[0] - '0';
    } else {
      n = mapped_bytes >= o.parallel_min_bytes && std::thread::hardware_concurrency() >= 2 ? 2 : 1;
    }
  }
  return n == 2 && mapped_bytes > 0 && mapped_bytes >= o.parallel_min_bytes ? 2 : 1;
}

}  // namespace

bool TraceRowSource::next_batch(TraceRowBatch& b) {
  batch_time_s_.clear();
  batch_power_w_.clear();
  batch_energy_j_.clear();
  batch_gpu_.clear();
  batch_line_.clear();
  TraceRow row;
  while (batch_time_s_.size() < kBatchRows) {
    if (has_pending_) {
      row = pending_;
      has_pending_ = false;
    } else if (!next(row)) {
      break;
    }
    if (!batch_time_s_.empty() && row.line - b.line_base > INT32_MAX) {
      pending_ = row;
      has_pending_ = true;
      break;
    }
    if (batch_time_s_.empty()) b.line_base = row.line;
    batch_time_s_.push_back(row.time_s);
    batch_power_w_.push_back(row.reading.power_w);
    batch_energy_j_.push_back(row.reading.energy_j);
    batch_gpu_.push_back(row.reading.gpu);
    batch_line_.push_back(static_cast<int32_t>(row.line - b.line_base));
  }
  b.n = batch_time_s_.size();
  b.time_s = batch_time_s_.data();
  b.power_w = batch_power_w_.data();
  b.energy_j = batch_energy_j_.data();
  b.gpu = batch_gpu_.data();
  b.line = batch_line_.data();
  return b.n > 0;
}

bool TraceRowSource::skip_non_data(const CsvReader& r, std::string_view header_line) {
  if (r.unterminated()) {
    warn(r.where() +
         ": partial last line dropped (no newline at its end: a log still being written?)");
    return true;
  }
  if (r.line().size() == header_line.size() && r.line() == header_line) {
    warn(r.where() + ": repeated header line skipped (logging restarted and appended?)");
    return true;
  }
  return false;
}

std::string_view trace_format_name(TraceFormat f) {
  switch (f) {
    case TraceFormat::kFlexwattDir:
      return "flexwatt trace directory";
    case TraceFormat::kFlexwattCsv:
      return "flexwatt gpus.csv";
    case TraceFormat::kNvidiaSmi:
      return "nvidia-smi csv log";
    case TraceFormat::kDcgmiDmon:
      return "dcgmi dmon log";
  }
  return "?";
}

Result<std::vector<int>> gpus_from_meta(const nlohmann::json& meta, const std::string& where) {
  std::vector<int> out;
  if (!meta.is_object() || !meta.contains("gpus")) return out;
  const nlohmann::json& g = meta["gpus"];
  if (!g.is_array()) return Status::InvalidArgument(where + ": gpus: expected an array");
  for (const auto& e : g) {
    const nlohmann::json* v =
        e.is_number_integer()                                                    ? &e
        : e.is_object() && e.contains("index") && e["index"].is_number_integer() ? &e["index"]
                                                                                 : nullptr;
    if (v == nullptr) {
      return Status::InvalidArgument(where + ": gpus: expected integers or objects with \"index\"");
    }
    int64_t index = 0;
    if (!json_int_in(*v, 0, kMaxGpuIndex, index)) {
      return Status::InvalidArgument(where + ": gpus: index " + v->dump() + " out of range 0.." +
                                     std::to_string(kMaxGpuIndex));
    }
    out.push_back(static_cast<int>(index));
  }
  return out;
}

// Long by design: format detection and header mapping for every supported format, in detection
// order.
Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path,
                                                       const TraceReaderOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::unique_ptr<TraceReader> t(new TraceReader());
  std::vector<int> known = options.gpus;
  if (fs::is_directory(path, ec)) {
    t->format_ = TraceFormat::kFlexwattDir;
    t->rows_path_ = (fs::path(path) / "gpus.csv").string();
    if (!fs::exists(t->rows_path_, ec)) return Status::NotFound(t->rows_path_ + ": no such file");
    const std::string jobs = (fs::path(path) / "jobs.csv").string();
    if (fs::exists(jobs, ec)) t->jobs_path_ = jobs;
    const std::string meta = (fs::path(path) / "meta.json").string();
    if (fs::exists(meta, ec)) {
      std::ifstream in(meta);
      try {
        t->meta_ = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        return Status::InvalidArgument(meta + ": not valid JSON: " + e.what());
      }
      if (!t->meta_.is_object()) {
        return Status::InvalidArgument(meta + ": expected a JSON object, got " +
                                       std::string(t->meta_.type_name()));
      }
      FW_ASSIGN_OR_RETURN(std::vector<int> from_meta, gpus_from_meta(t->meta_, meta));
      if (known.empty()) known = from_meta;
    }
  } else {
    if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file or directory");
    t->rows_path_ = path;
  }
  for (int g : known) {
    if (g < 0 || g > kMaxGpuIndex) {
      return Status::InvalidArgument("gpu index " + std::to_string(g) + " out of range 0.." +
                                     std::to_string(kMaxGpuIndex));
    }
  }

  FW_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> r, CsvReader::open(t->rows_path_));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(t->rows_path_ + ":1: empty file (expected a header row)");
  }
  std::vector<std::string> header(r->fields().begin(), r->fields().end());
  if (const Compression* c = compression_of(r->line())) {
    return Status::InvalidArgument(
        r->where() + ": header: the file is " + c->name + "-compressed; decompress it first (" +
        c->cat + " FILE > trace.csv, or " + c->cat + " FILE | flexwatt analyze - ...)");
  }
  if (is_nvsmi_header(r->fields())) {
    if (t->format_ == TraceFormat::kFlexwattDir) {
      return Status::InvalidArgument(r->where() +
                                     ": header: an nvidia-smi log cannot be a trace's gpus.csv");
    }
    t->format_ = TraceFormat::kNvidiaSmi;
    FW_ASSIGN_OR_RETURN(t->source_,
                        open_nvsmi_source(std::move(r), header, options, known, t->meta_));
    return t;
  }
  if (is_dmon_header(r->line())) {
    if (t->format_ == TraceFormat::kFlexwattDir) {
      return Status::InvalidArgument(r->where() +
                                     ": header: dcgmi dmon output cannot be a trace's gpus.csv");
    }
    t->format_ = TraceFormat::kDcgmiDmon;
    FW_ASSIGN_OR_RETURN(t->source_, open_dmon_source(std::move(r), options, known, t->meta_));
    return t;
  }
  static constexpr const char* kCols[] = {"time_s",   "gpu",           "power_w",
                                          "energy_j", "power_limit_w", "sm_util",
                                          "mem_util", "sm_clock_mhz",  "temp_c"};
  std::vector<int> cols(9, -1);
  for (size_t i = 0; i < header.size(); ++i) {
    for (int c = 0; c < 9; ++c) {
      if (header[i] == kCols[c] && cols[c] < 0) cols[c] = static_cast<int>(i);
    }
  }
  if (cols[0] < 0 || cols[1] < 0 || cols[2] < 0) {
    std::string missing;
    for (int c = 0; c < 3; ++c) {
      if (cols[c] < 0) missing += (missing.empty() ? "" : ", ") + std::string(kCols[c]);
    }
    return Status::InvalidArgument(
        r->where() + ": header: not a flexwatt trace (missing " + missing +
        ") nor an nvidia-smi log (needs timestamp and power.draw) nor dcgmi dmon output "
        "(#Entity ...); got '" +
        printable(r->line(), 160) + "'");
  }
  // Large mapped files are parsed by two threads (same rows, errors and warnings).
  if (parse_threads(options, r->mapped().size()) == 2) {
    t->source_ = std::make_unique<ChunkedFlexwattSource>(
        std::move(r), cols, options.fields, known, options.parallel_block_bytes, options.in_place);
  } else {
    std::string header_line(r->line());
    t->source_ = std::make_unique<FlexwattSource>(std::move(r), cols, options.fields, known,
                                                  std::move(header_line), options.in_place);
  }
  return t;
}

Status validate(const TraceReaderOptions& o) {
  if (o.nvsmi_gpus_per_tick < 0 || o.nvsmi_gpus_per_tick > kMaxGpusPerLoop) {
    return Status::InvalidArgument("--nvsmi-gpus: must be 0 (detect) or 1..64");
  }
  if (o.parse_threads < 0 || o.parse_threads > 2) {
    return Status::InvalidArgument("--parse-threads: must be 0 (automatic), 1 or 2");
  }
  if (!std::isnan(o.dmon_period_s) && !(o.dmon_period_s > 0 && o.dmon_period_s <= 3600)) {
    return Status::InvalidArgument("--dmon-period-s: must be in (0, 3600] seconds");
  }
  return Status::Ok();
}

Result<std::optional<double>> read_job_tokens(const std::string& path) {
  FW_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> r, CsvReader::open(path));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(path + ":1: empty file (expected a header row)");
  }
  int job_col = -1, tok_col = -1;
  for (size_t i = 0; i < r->fields().size(); ++i) {
    if (r->fields()[i] == "job") job_col = static_cast<int>(i);
    if (r->fields()[i] == "tokens_total") tok_col = static_cast<int>(i);
  }
  if (tok_col < 0) return std::optional<double>();
  if (job_col < 0) return Status::InvalidArgument(r->where() + ": header: no 'job' column");
  std::map<int64_t, std::pair<double, double>> first_last;
  while (r->next()) {
    const auto& f = r->fields();
    if (static_cast<int>(f.size()) <= std::max(job_col, tok_col)) {
      return Status::InvalidArgument(r->where() + ": row: too few fields");
    }
    int64_t job;
    if (!parse_int64(f[job_col], job)) {
      return Status::InvalidArgument(r->where() + ": job: not an integer: '" +
                                     std::string(f[job_col]) + "'");
    }
    if (f[tok_col].empty()) continue;
    double tok;
    if (!parse_double(f[tok_col], tok) || !std::isfinite(tok)) {
      return Status::InvalidArgument(r->where() + ": tokens_total: not a finite number: '" +
                                     std::string(f[tok_col]) + "'");
    }
    auto [it, inserted] = first_last.try_emplace(job, tok, tok);
    if (!inserted) {
      if (tok < it->second.second) {
        return Status::InvalidArgument(r->where() + ": tokens_total: decreases for job " +
                                       std::to_string(job) + " (" + fmt_num(tok) + " after " +
                                       fmt_num(it->second.second) + ")");
      }
      it->second.second = tok;
    }
  }
  FW_RETURN_IF_ERROR(r->status());
  if (first_last.empty()) return std::optional<double>();
  double sum = 0;
  for (const auto& [job, fl] : first_last) sum += fl.second - fl.first;
  return std::optional<double>(sum);
}

}  // namespace fw
