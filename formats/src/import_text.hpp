#pragma once
// Text helpers of the log parsers (import_*.cpp): lines, tokens and numbers without std::regex
// (recursive in libstdc++: a long line can overflow the stack, and logs come from anywhere).
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardcal::formats::import_detail {

inline std::string_view trim(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

inline bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// Calls f(line_number, line) for every line ('\n'-separated, a trailing '\r' kept for trim).
template <class F>
void for_each_line(std::string_view text, F&& f) {
  int n = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    f(++n, text.substr(pos, end - pos));
    pos = end + 1;
  }
}

inline std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    if (i >= s.size()) break;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// A whole token as a (possibly negative) integer.
inline std::optional<std::int64_t> to_int(std::string_view t) {
  std::int64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

// A whole token as a finite decimal number (no hex, inf or nan).
inline std::optional<double> to_double(std::string_view t) {
  if (t.empty() || t.size() > 64) return std::nullopt;
  for (char c : t)
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      return std::nullopt;
  const std::string s(t);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

inline bool is_uint_token(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace shardcal::formats::import_detail

namespace shardcal::formats {
struct ParsedLog;
}  // namespace shardcal::formats

namespace shardcal::formats::import_detail {
// Throws Error("NAME:LINE: WHAT"), the text importers' message shape.
[[noreturn]] void fail(const std::string& name, int line, const std::string& what);

// The data rows of a text log's table, as both text importers (nccl-tests, OSU) treat them: a
// row with a field count its header does not allow is acceptable only as the table's last (a
// killed job, a log copied partially): held, an error naming it if another row follows, else
// skipped with a note by finish(); a table without rows is an error at its header line.
class TableRows {
 public:
  // header: what the header is called in messages ("table header", "column header").
  TableRows(std::string name, std::string header) : name_(std::move(name)), header_(std::move(header)) {}
  // One data row of `fields` fields at `line`; `fits`: its count is one the header (at
  // header_line, header_fields fields) allows. False: the row is cut short; do not parse it.
  bool accept(int line, std::size_t fields, bool fits, std::size_t header_fields, int header_line);
  // After the table: the held row skipped (log.skipped_truncated, a note), or no rows: an error.
  void finish(ParsedLog& log, int header_line) const;

 private:
  std::string name_, header_;
  int rows_ = 0;
  int pending_line_ = 0;  // the cut row's line (0: none)
  std::string pending_what_;
};

// A table without a program name: the collective its rows fit (redop, count column,
// busbw/algbw against nccl-tests' factors at `group_size` ranks, root), or the candidates and
// the evidence (import_logs.cpp). Sets collective, benchmark, benchmark_from, candidates,
// evidence and undetermined.
void infer_from_table(ParsedLog& log, int group_size);
}  // namespace shardcal::formats::import_detail
