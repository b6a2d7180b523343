#include "shardcal/formats/json.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "shardcal/error.hpp"

namespace shardcal::formats {

namespace {

// Walks valid JSON text without building values, calling visit(pointer, line, token) at the start
// of every value (token: the number literal for numbers, empty otherwise) until it returns true.
// An explicit stack, not recursion: the text may nest as deep as the parser allowed.
class Walker {
 public:
  explicit Walker(std::string_view t) : t_(t) {}

  bool run(const std::function<bool(const std::string&, int, std::string_view)>& visit) {
    struct Frame {
      bool object;
      std::string key;
      std::size_t index;
    };
    std::vector<Frame> stack;
    auto pointer = [&] {
      std::string p;
      for (const Frame& f : stack) p += "/" + (f.object ? f.key : std::to_string(f.index));
      return p;
    };
    bool expect_value = true;
    while (true) {
      skip_ws();
      if (i_ >= t_.size()) return false;
      const char c = t_[i_];
      if (expect_value) {
        expect_value = false;
        std::string_view number;
        if (c == '-' || (c >= '0' && c <= '9')) {
          const std::size_t b = i_;
          while (i_ < t_.size() && t_[i_] != '\0' && std::strchr("+-0123456789.eE", t_[i_]) != nullptr) ++i_;
          number = t_.substr(b, i_ - b);
          if (visit(pointer(), line_, number)) return true;
        } else {
          if (visit(pointer(), line_, {})) return true;
          if (c == '{' || c == '[') {
            ++i_;
            stack.push_back({c == '{', {}, 0});
            skip_ws();
            if (i_ < t_.size() && (t_[i_] == '}' || t_[i_] == ']')) continue;  // empty
            if (c == '{') read_key(stack.back().key);
            expect_value = true;
            continue;
          }
          if (c == '"') skip_string(nullptr);
          else while (i_ < t_.size() && std::isalpha(static_cast<unsigned char>(t_[i_]))) ++i_;
        }
        continue;
      }
      if (c == ',') {
        ++i_;
        if (stack.empty()) return false;
        ++stack.back().index;
        if (stack.back().object) read_key(stack.back().key);
        expect_value = true;
      } else if (c == '}' || c == ']') {
        ++i_;
        if (stack.empty()) return false;
        stack.pop_back();
      } else {
        return false;  // not JSON this walker understands: no location
      }
    }
  }

 private:
  void skip_ws() {
    while (i_ < t_.size() && t_[i_] != '\0' && std::strchr(" \t\r\n", t_[i_]) != nullptr) {
      if (t_[i_] == '\n') ++line_;
      ++i_;
    }
  }
  // A string literal; its text (escapes decoded as JSON pointer tokens need them) into *out.
  void skip_string(std::string* out) {
    ++i_;  // opening quote
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (c == '\\' && i_ < t_.size()) {
        const char e = t_[i_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': c = '?', i_ = std::min(t_.size(), i_ + 4); break;  // rare in keys
          default: c = e;
        }
      }
      if (out != nullptr) {
        if (c == '~') *out += "~0";
        else if (c == '/') *out += "~1";
        else *out += c;
      }
    }
    ++i_;  // closing quote
  }
  void read_key(std::string& key) {
    key.clear();
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '"') skip_string(&key);
    skip_ws();
    if (i_ < t_.size() && t_[i_] == ':') ++i_;
  }

  std::string_view t_;
  std::size_t i_ = 0;
  int line_ = 1;
};

bool overflows(std::string_view number) {
  const std::string s(number);
  errno = 0;
  const double d = std::strtod(s.c_str(), nullptr);
  return !std::isfinite(d) || (errno == ERANGE && d != 0.0);
}

}  // namespace

int line_of(std::string_view text, std::string_view pointer) {
  int found = 0;
  Walker(text).run([&](const std::string& p, int line, std::string_view) {
    if (p != pointer) return false;
    found = line;
    return true;
  });
  return found;
}

JsonLocation find_out_of_range_number(std::string_view text) {
  JsonLocation loc;
  Walker(text).run([&](const std::string& p, int line, std::string_view number) {
    if (number.empty() || !overflows(number)) return false;
    loc = {line, p};
    return true;
  });
  return loc;
}

int JsonSource::line(const std::string& pointer) const {
  const auto nl = text_.find('\n');
  if (nl == std::string_view::npos || nl + 1 == text_.size()) return 0;
  return line_of(text_, pointer);
}

void JsonSource::fail(const std::string& pointer, const std::string& what) const {
  const int l = line(pointer);
  throw Error(origin_ + ": " + (pointer.empty() ? "/" : pointer) + ": " + what +
              (l > 0 ? " (line " + std::to_string(l) + ")" : std::string()));
}

namespace {

// nlohmann's parse error from "syntax error" on (its own prefix and byte position dropped: the
// callers give the line and column).
std::string syntax_error_text(const nlohmann::json::parse_error& e) {
  const std::string what = e.what();
  const auto pos = what.find("syntax error");
  return pos == std::string::npos ? what : what.substr(pos);
}

// "origin[: line L]: a number is outside the range of a double (field /pointer); use a finite
// value[; fix]": nlohmann's "number overflow parsing '1e999'" carries no offset, so the walker
// finds the literal.
Error out_of_range_error(std::string_view text, const std::string& origin, bool name_line,
                         const std::string& fix) {
  const JsonLocation loc = find_out_of_range_number(text);
  return Error(origin +
               (name_line && loc.line > 0 ? ": line " + std::to_string(loc.line) : std::string()) +
               ": a number is outside the range of a double (field " +
               (loc.pointer.empty() ? "/" : loc.pointer) + "); use a finite value" +
               (fix.empty() ? "" : "; " + fix));
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& origin, const std::string& fix,
                          int max_depth, const std::string& range_fix) {
  using json = nlohmann::json;
  try {
    // The callback bounds nesting: the parser itself is iterative, but dumping and destroying
    // values recurse.
    return json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (max_depth > 0 && depth > max_depth)
        throw Error(origin + ": JSON nested deeper than " + std::to_string(max_depth) +
                    " levels" + (fix.empty() ? "" : "; " + fix));
      return true;
    });
  } catch (const json::parse_error& e) {
    // The byte offset as line:column, which is what editors show.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    throw Error(origin + ": line " + std::to_string(line) + ", column " + std::to_string(col) +
                ": invalid JSON: " + syntax_error_text(e) + (fix.empty() ? "" : "; " + fix));
  } catch (const json::out_of_range&) {
    throw out_of_range_error(text, origin, /*name_line=*/true, range_fix.empty() ? fix : range_fix);
  }
}

std::optional<nlohmann::json> parse_json_line(std::string_view line, const std::string& where,
                                              bool may_be_torn, const std::string& fix,
                                              const std::string& range_fix) {
  using json = nlohmann::json;
  try {
    return json::parse(line);
  } catch (const json::parse_error& e) {
    if (may_be_torn) return std::nullopt;
    const std::size_t col = std::max<std::size_t>(e.byte, 1);
    throw Error(where + ": column " + std::to_string(col) + ": invalid JSON: " +
                syntax_error_text(e) + (fix.empty() ? "" : "; " + fix));
  } catch (const json::out_of_range&) {
    throw out_of_range_error(line, where, /*name_line=*/false, range_fix);
  }
}

std::string read_text_file(const std::string& path, const std::string& what, const std::string& fix) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory, not a file; " + fix);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open " + what + " (" + std::strerror(errno) + "); " + fix);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error; check the file");
  return ss.str();
}

}  // namespace shardcal::formats
