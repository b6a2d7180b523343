#pragma once
// The one JSON reading layer of every shardcal file (configs, profiles, results, gate inputs),
// on top of nlohmann/json: parse errors and field errors name the file, the line and the JSON
// pointer of the field, and a number outside a double's range (1e999) is bad input like any other
// (shardcal::Error, exit 2), never an internal error.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace shardcal::formats {

// Where a value sits in a document's text.
struct JsonLocation {
  int line = 0;         // 1-based; 0 when unknown
  std::string pointer;  // RFC 6901 JSON pointer ("" = the whole document)
};

// The line of the value at `pointer` in `text` (which must be valid JSON); 0 when no such value.
int line_of(std::string_view text, std::string_view pointer);
// The first number literal of `text` outside a double's range, if any (line 0 when none).
JsonLocation find_out_of_range_number(std::string_view text);

// A document's text and its name, for error messages.
class JsonSource {
 public:
  JsonSource(std::string origin, std::string_view text) : origin_(std::move(origin)), text_(text) {}
  const std::string& origin() const { return origin_; }
  // The line of the value at `pointer`; 0 when unknown or the text is one line (where the line
  // says nothing).
  int line(const std::string& pointer) const;
  // Throws shardcal::Error("origin: /pointer: what (line L)"); the line last, so a message
  // starts the same way with or without it.
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const;

 private:
  std::string origin_;
  std::string_view text_;
};

// Parses `text` (named `origin`), nesting at most `max_depth` levels (0: no limit). Throws
// shardcal::Error: "origin: line L, column C: invalid JSON: ...; fix" for syntax errors and
// "origin: line L: a number is outside the range of a double (field /pointer); use a finite
// value; fix" for overflowing numbers ("; fix" only when `fix` is not empty). `range_fix`, when
// not empty, replaces `fix` for overflowing numbers (valid syntax, so a fix about corrupt text
// would mislead).
nlohmann::json parse_json(std::string_view text, const std::string& origin, const std::string& fix,
                          int max_depth = 0, const std::string& range_fix = {});

// Parses one line of a JSON Lines file; `where` names the file and the line ("FILE:LINE" or
// "FILE: line N"), so messages give the column, not a line. Throws shardcal::Error in
// parse_json's words: "where: column C: invalid JSON: ...; fix" for a syntax error (unless
// `may_be_torn`: then nullopt, for a last line cut short by a killed writer, which the caller
// drops) and "where: a number is outside the range of a double (field /pointer); use a finite
// value; range_fix" for an overflowing number (valid syntax, so never torn).
std::optional<nlohmann::json> parse_json_line(std::string_view line, const std::string& where,
                                              bool may_be_torn, const std::string& fix,
                                              const std::string& range_fix);

// A file's whole text. Throws shardcal::Error naming the path when it is a directory or cannot be
// opened ("PATH: cannot open WHAT (OS reason); FIX") or read; `what` names the kind of file ("the
// sweep config"), `fix` says what to do.
std::string read_text_file(const std::string& path, const std::string& what, const std::string& fix);

}  // namespace shardcal::formats
