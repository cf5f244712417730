#pragma once
// Plain-text tables and prose for a terminal: what the verbs print on stdout fits
// TextStyle::width columns (120) by default; `--wide` (TextStyle::wide) prints every column
// with no width limit. Widths are display widths (UTF-8 code points: "±" and "—" count one).
//
// Contract (pure, thread-safe):
//   display_width(s)       code points of s (bytes that are not UTF-8 continuation bytes).
//   wrap_text(t, w, ind)   each line of t word-wrapped to w columns; continuation lines
//                          begin with `ind` (a line's own leading spaces are kept on its first
//                          line and added to `ind`); a word longer than a line stays whole.
//   render_table(t, st)    the header and one line per row, the label (first cell) left
//                          aligned, every other cell right aligned, two spaces between
//                          columns, each column as wide as its widest cell. Unless st.wide,
//                          columns of rank 0 are left out, and while the table is wider than
//                          st.width with labels at 12 columns, the columns of the highest rank
//                          are left out too (their headers appended to *left_out); a label
//                          longer than what is left of the width then has a line of its own,
//                          its cells start on the next line, and the label column is as wide
//                          as the widest label that fits. Rows have one cell per column after
//                          the label (missing cells print empty).

#include <string>
#include <vector>

namespace fw {

struct TextStyle {
  bool wide = false;  // every column, no width limit
  int width = 120;    // the limit otherwise
};

struct TextColumn {
  std::string header;
  int rank = 1;  // 0: only with wide; higher ranks are left out first to fit the width
};

struct TextTable {
  std::string label_header;  // the first column's header ("controller")
  std::vector<TextColumn> columns;
  std::vector<std::vector<std::string>> rows;  // rows[i][0]: the label; then one per column
};

int display_width(const std::string& s);
std::string wrap_text(const std::string& text, int width, const std::string& indent = "");
std::string render_table(const TextTable& table, const TextStyle& style,
                         std::vector<std::string>* left_out = nullptr);

}  // namespace fw
