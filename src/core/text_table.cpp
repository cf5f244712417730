#include "core/text_table.hpp"

#include <algorithm>
#include <sstream>

namespace fw {

int display_width(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

std::string pad_left(const std::string& s, int w) {
  return std::string(static_cast<size_t>(std::max(0, w - display_width(s))), ' ') + s;
}
std::string pad_right(const std::string& s, int w) {
  return s + std::string(static_cast<size_t>(std::max(0, w - display_width(s))), ' ');
}

std::string wrap_line(const std::string& line, int width, const std::string& indent) {
  size_t lead = line.find_first_not_of(' ');
  if (lead == std::string::npos) return line;
  const std::string first_indent = line.substr(0, lead);
  const std::string next_indent = first_indent + indent;
  std::istringstream words(line.substr(lead));
  std::string out = first_indent, word;
  int col = display_width(first_indent);
  bool at_start = true;
  while (words >> word) {
    const int w = display_width(word);
    if (!at_start && col + 1 + w > width) {
      out += "\n" + next_indent;
      col = display_width(next_indent);
      at_start = true;
    }
    if (!at_start) {
      out += ' ';
      ++col;
    }
    out += word;
    col += w;
    at_start = false;
  }
  return out;
}

}  // namespace

std::string wrap_text(const std::string& text, int width, const std::string& indent) {
  std::string out;
  size_t a = 0;
  while (a <= text.size()) {
    size_t b = text.find('\n', a);
    const bool last = b == std::string::npos;
    if (last) b = text.size();
    out += wrap_line(text.substr(a, b - a), width, indent);
    if (last) break;
    out += '\n';
    a = b + 1;
  }
  return out;
}

std::string render_table(const TextTable& t, const TextStyle& style,
                         std::vector<std::string>* left_out) {
  const size_t nc = t.columns.size();
  auto cell = [&](size_t r, size_t c) -> const std::string& {  // c: column index + 1
    static const std::string empty;
    return c < t.rows[r].size() ? t.rows[r][c] : empty;
  };
  std::vector<int> w(nc);
  int label_w = display_width(t.label_header);
  for (size_t r = 0; r < t.rows.size(); ++r) label_w = std::max(label_w, display_width(cell(r, 0)));
  for (size_t c = 0; c < nc; ++c) {
    w[c] = display_width(t.columns[c].header);
    for (size_t r = 0; r < t.rows.size(); ++r) w[c] = std::max(w[c], display_width(cell(r, c + 1)));
  }
  std::vector<bool> shown(nc, true);
  int cells_w = 0;
  for (size_t c = 0; c < nc; ++c) {
    if (!style.wide && t.columns[c].rank == 0) shown[c] = false;
    if (shown[c]) cells_w += 2 + w[c];
  }
  constexpr int kMinLabel = 12;
  if (!style.wide) {
    while (kMinLabel + cells_w > style.width) {
      int top = 0;
      for (size_t c = 0; c < nc; ++c) {
        if (shown[c]) top = std::max(top, t.columns[c].rank);
      }
      if (top <= 1) break;             // rank 1 columns always stay
      for (size_t c = nc; c-- > 0;) {  // one column of the top rank, the last first
        if (shown[c] && t.columns[c].rank == top) {
          shown[c] = false;
          cells_w -= 2 + w[c];
          break;
        }
      }
    }
    const int avail = std::max(kMinLabel, style.width - cells_w);
    if (label_w > avail) {  // as wide as the widest label that fits; longer ones get a line
      label_w = display_width(t.label_header);
      for (size_t r = 0; r < t.rows.size(); ++r) {
        const int w0 = display_width(cell(r, 0));
        if (w0 <= avail) label_w = std::max(label_w, w0);
      }
    }
  }
  if (left_out != nullptr) {
    for (size_t c = 0; c < nc; ++c) {
      if (!shown[c]) left_out->push_back(t.columns[c].header);
    }
  }
  auto cells = [&](auto get) {
    std::string s;
    for (size_t c = 0; c < nc; ++c) {
      if (shown[c]) s += "  " + pad_left(get(c), w[c]);
    }
    return s;
  };
  std::string out = pad_right(t.label_header, label_w) +
                    cells([&](size_t c) { return t.columns[c].header; }) + "\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& label = cell(r, 0);
    if (display_width(label) > label_w)
      out += label + "\n" + std::string(label_w, ' ');
    else
      out += pad_right(label, label_w);
    out += cells([&](size_t c) { return cell(r, c + 1); }) + "\n";
  }
  return out;
}

}  // namespace fw
