#include "shardcal/formats/json_cursor.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace shardcal::formats {

using nlohmann::json;

namespace {

// One RFC 6901 reference token: "~" and "/" escaped, as JsonSource's line lookup expects.
std::string pointer_token(const std::string& key) {
  std::string t;
  for (char c : key) {
    if (c == '~') t += "~0";
    else if (c == '/') t += "~1";
    else t += c;
  }
  return t;
}

// The shortest text that reads back as x (15 significant digits, else 17): a bound of
// 1099511627776 and a value of 1099511627777 must not both print as 1.09951e+12.
std::string number_text(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  if (std::strtod(buf, nullptr) != x) std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

std::string json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::discarded: return "invalid";
    default: return "a number";
  }
}

std::string utf8_prefix(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t k = n;
  // Back off over continuation bytes (10xxxxxx) to the start of the cut character, then drop it.
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return s.substr(0, k);
}

std::string json_quote(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = utf8_prefix(s, 57) + "...";
  return s;
}

void JsonCursor::fail(const std::string& what) const { src_->fail(ptr_, what); }

void JsonCursor::fail_with_fix(const std::string& what) const {
  fail(fix_ == nullptr ? what : what + "; " + fix_);
}

void JsonCursor::wrong_kind(const char* expected) const {
  fail_with_fix(std::string("expected ") + expected + ", got " + json_kind(*v_) +
       (v_->is_null() ? std::string() : " (" + json_quote(*v_) + ")"));
}

void JsonCursor::out_of_range(const std::string& value, const std::string& bounds) const {
  fail_with_fix("value " + value + " is out of range; expected " + bounds);
}

JsonCursor JsonCursor::required(const std::string& key, const std::string& fix) const {
  object();
  const auto it = v_->find(key);
  const std::string p = ptr_ + "/" + pointer_token(key);
  if (it == v_->end())
    src_->fail(p, "required field is missing" + (fix.empty() ? std::string() : "; " + fix));
  return JsonCursor(*src_, *it, p, fix_);
}

std::optional<JsonCursor> JsonCursor::optional(const std::string& key) const {
  object();
  const auto it = v_->find(key);
  if (it == v_->end()) return std::nullopt;
  return JsonCursor(*src_, *it, ptr_ + "/" + pointer_token(key), fix_);
}

JsonCursor JsonCursor::operator[](std::size_t i) const {
  return JsonCursor(*src_, (*v_)[i], ptr_ + "/" + std::to_string(i), fix_);
}

void JsonCursor::expect_keys(std::initializer_list<const char*> allowed, const std::string& fix,
                             std::initializer_list<const char*> ignored) const {
  expect_keys(std::span<const char* const>(allowed.begin(), allowed.size()), fix,
              std::span<const char* const>(ignored.begin(), ignored.size()));
}

void JsonCursor::expect_keys(std::span<const char* const> allowed, const std::string& fix,
                             std::span<const char* const> ignored) const {
  object();
  for (auto it = v_->begin(); it != v_->end(); ++it) {
    const std::string& k = it.key();
    bool known = false;
    for (const char* a : allowed) known = known || k == a;
    for (const char* a : ignored) known = known || k == a;
    if (known) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    src_->fail(ptr_ + "/" + pointer_token(k), "unknown key \"" + k + "\"; expected one of " + list +
                                                  (fix.empty() ? std::string() : "; " + fix));
  }
}

const JsonCursor& JsonCursor::object() const {
  if (!v_->is_object()) wrong_kind("an object");
  return *this;
}

const JsonCursor& JsonCursor::array(bool non_empty) const {
  if (!v_->is_array()) wrong_kind("an array");
  if (non_empty && v_->empty()) fail_with_fix("the list is empty; give at least one entry");
  return *this;
}

std::string JsonCursor::string() const {
  if (!v_->is_string()) wrong_kind("a string");
  return v_->get<std::string>();
}

bool JsonCursor::boolean() const {
  if (!v_->is_boolean()) wrong_kind("a boolean (true or false)");
  return v_->get<bool>();
}

std::int64_t JsonCursor::integer(std::int64_t lo, std::int64_t hi) const {
  if (!v_->is_number_integer()) wrong_kind("an integer");
  // An unsigned value above INT64_MAX is out of every range this reads.
  // (A non-negative value is above any negative hi.)
  const bool out = v_->is_number_unsigned()
                       ? hi < 0 || v_->get<std::uint64_t>() > std::uint64_t(hi) ||
                             (lo > 0 && v_->get<std::uint64_t>() < std::uint64_t(lo))
                       : v_->get<std::int64_t>() < lo || v_->get<std::int64_t>() > hi;
  if (out)
    out_of_range(v_->dump(), std::to_string(lo) + " <= value <= " + std::to_string(hi));
  return v_->get<std::int64_t>();
}

std::int64_t JsonCursor::whole_number(std::int64_t lo, std::int64_t hi) const {
  if (v_->is_number_integer()) return integer(lo, hi);
  const bool whole = v_->is_number_float() && std::floor(v_->get<double>()) == v_->get<double>();
  if (!whole) wrong_kind("an integer");
  const double d = v_->get<double>();
  // Compared as doubles: a cast of 1e30 to an integer would be undefined (and double(INT64_MAX)
  // rounds up to 2^63, which does not fit either).
  if (d < double(lo) || d > double(hi) || d >= 0x1p63)
    out_of_range(number_text(d), std::to_string(lo) + " <= value <= " + std::to_string(hi));
  return std::int64_t(d);
}

double JsonCursor::number(double lo, double hi, bool lo_open) const {
  if (!v_->is_number()) wrong_kind("a number");
  const double x = v_->get<double>();
  if ((lo_open ? x > lo : x >= lo) && x <= hi) return x;
  std::string bounds;
  const std::string lo_op = lo_open ? " < " : " <= ";
  if (std::isinf(hi)) bounds = std::string("value") + (lo_open ? " > " : " >= ") + number_text(lo);
  else if (std::isinf(lo)) bounds = "value <= " + number_text(hi);
  else bounds = number_text(lo) + lo_op + "value <= " + number_text(hi);
  out_of_range(number_text(x), bounds);
}

}  // namespace shardcal::formats
