#include "core/csv.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

namespace fw {
namespace {
constexpr size_t kBlock = 1 << 20;
// Longest line read from a stream (a pipe, a device): a text log's lines are far shorter; one
// this long is a device such as /dev/zero or binary data, refused before memory runs out.
constexpr size_t kMaxStreamLineBytes = size_t{16} << 20;
}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string ascii_lower(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return o;
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

Status parse_double_list(std::string_view s, std::string_view flag, std::vector<double>& out) {
  out.clear();
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = s.find(',', pos);
    const std::string_view item = s.substr(pos, c == std::string_view::npos ? s.npos : c - pos);
    double v;
    if (!parse_double(item, v)) {
      return Status::InvalidArgument(std::string(flag) + ": not a number: '" + std::string(item) +
                                     "'");
    }
    out.push_back(v);
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  return Status::Ok();
}

bool parse_int64(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

CsvReader::CsvReader(std::string path, std::FILE* f) : path_(std::move(path)), file_(f) {
  fields_.reserve(16);
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fileno(f), 0);
    if (m != MAP_FAILED) {
      madvise(m, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      map_ = static_cast<const char*>(m);
      map_size_ = static_cast<size_t>(st.st_size);
      end_ = map_size_;
      eof_ = true;
      return;
    }
  }
  buf_.resize(2 * kBlock);
}

std::unique_ptr<CsvReader> CsvReader::over(std::string path, std::string_view bytes,
                                           int64_t first_line) {
  std::unique_ptr<CsvReader> r(new CsvReader());
  r->path_ = std::move(path);
  r->fields_.reserve(16);
  r->map_ = bytes.data();
  r->map_size_ = bytes.size();
  r->owns_map_ = false;
  r->end_ = bytes.size();
  r->eof_ = true;
  r->at_start_ = false;
  r->line_no_ = first_line - 1;
  return r;
}

CsvReader::~CsvReader() {
  if (map_ && owns_map_) munmap(const_cast<char*>(map_), map_size_);
  if (file_) std::fclose(file_);
}

Result<std::unique_ptr<CsvReader>> CsvReader::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IoError(path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<CsvReader>(new CsvReader(path, f));
}

std::string CsvReader::where() const { return path_ + ":" + std::to_string(line_no_); }

// Moves unread bytes to the front and reads more. Returns false when nothing was added.
bool CsvReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < kBlock) buf_.resize(buf_.size() * 2);
  const size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_);
  if (n == 0) {
    if (std::ferror(file_)) status_ = Status::IoError(path_ + ": read error");
    eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

bool CsvReader::next() {
  if (at_start_) {
    at_start_ = false;
    while (end_ - begin_ < 3 && fill()) {
    }
    if (end_ - begin_ >= 3 && std::memcmp(base() + begin_, "\xEF\xBB\xBF", 3) == 0) begin_ += 3;
  }
  for (;;) {
    const char* start = base() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    size_t len;
    if (nl) {
      len = static_cast<const char*>(nl) - start;
    } else if (end_ - begin_ > kMaxStreamLineBytes) {
      status_ = Status::InvalidArgument(path_ + ":" + std::to_string(line_no_ + 1) +
                                        ": a line longer than " +
                                        std::to_string(kMaxStreamLineBytes >> 20) +
                                        " MiB: not a text log (a device, or binary data?)");
      return false;
    } else if (fill()) {
      continue;  // buffer moved; search again
    } else if (end_ > begin_) {
      len = end_ - begin_;  // last line without a newline
      start = base() + begin_;
    } else {
      return false;
    }
    line_ = std::string_view(base() + begin_, len);
    unterminated_ = nl == nullptr;
    begin_ += len + (nl ? 1 : 0);
    if (!nl && begin_ > end_) begin_ = end_;
    ++line_no_;
    // Split on ',' in one pass, trimming each field in place (the hot path of every reader).
    const char* b = line_.data();
    const char* e = b + line_.size();
    while (b < e && (*b == ' ' || *b == '\t')) ++b;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) --e;
    if (b == e) continue;
    line_ = std::string_view(b, static_cast<size_t>(e - b));
    fields_.clear();
    for (const char* p = b;;) {
      const char* q = p;
      while (q < e && *q != ',') ++q;
      const char* fb = p;
      const char* fe = q;
      while (fb < fe && (*fb == ' ' || *fb == '\t')) ++fb;
      while (fe > fb && (fe[-1] == ' ' || fe[-1] == '\t' || fe[-1] == '\r')) --fe;
      if (fe - fb >= 2 && *fb == '"' && fe[-1] == '"') {
        ++fb;
        --fe;
      }
      fields_.emplace_back(fb, static_cast<size_t>(fe - fb));
      if (q == e) break;
      p = q + 1;
    }
    return true;
  }
}

CsvWriter::CsvWriter(std::string path, std::FILE* f) : path_(std::move(path)), file_(f) {
  buf_.reserve(kBlock + 4096);
}

CsvWriter::~CsvWriter() { (void)close(); }

Result<std::unique_ptr<CsvWriter>> CsvWriter::create(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::IoError(path + ": cannot create: " + std::strerror(errno));
  return std::unique_ptr<CsvWriter>(new CsvWriter(path, f));
}

void CsvWriter::sep() {
  if (row_started_) buf_.push_back(',');
  row_started_ = true;
}

CsvWriter& CsvWriter::field(std::string_view s) {
  sep();
  buf_.append(s);
  return *this;
}

CsvWriter& CsvWriter::field(double v) {
  sep();
  if (std::isnan(v)) {
    buf_.append("nan");
    return *this;
  }
  char tmp[32];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, p);
  return *this;
}

CsvWriter& CsvWriter::field(double v, int decimals) {
  sep();
  if (std::isnan(v)) {
    buf_.append("nan");
    return *this;
  }
  char tmp[64];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::fixed, decimals);
  buf_.append(tmp, p);
  return *this;
}

CsvWriter& CsvWriter::field(int64_t v) {
  sep();
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, p);
  return *this;
}

void CsvWriter::header(std::string_view names) {
  buf_.append(names);
  end_row();
}

void CsvWriter::end_row() {
  buf_.push_back('\n');
  row_started_ = false;
  flush_if_full();
}

void CsvWriter::flush_if_full() {
  if (buf_.size() < kBlock || !file_) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) failed_ = true;
  buf_.clear();
}

void CsvWriter::flush() {
  if (!file_) return;
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    failed_ = true;
  }
  buf_.clear();
  if (std::fflush(file_) != 0) failed_ = true;
}

Status CsvWriter::close() {
  if (!file_) return failed_ ? Status::IoError(path_ + ": write failed") : Status::Ok();
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size())
    failed_ = true;
  buf_.clear();
  if (std::fclose(file_) != 0) failed_ = true;
  file_ = nullptr;
  return failed_ ? Status::IoError(path_ + ": write failed") : Status::Ok();
}

}  // namespace fw
