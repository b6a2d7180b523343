#pragma once
// The typed getters every shardcal reader uses (sweep config, profile, sweep results, the resume
// check): a JsonCursor is one value of a parsed document together with its JSON pointer and the
// document's JsonSource, so every getter can fail with one message naming the file, the field
// and, in a file of several lines, its line — in the same words whichever file it reads:
//   "FILE: /sizes/0: expected an integer, got a string (\"4k\") (line 7)"
//   "FILE: /warmup: value -1 is out of range; expected 0 <= value <= 1000000"
//   "FILE: /models/0/hosts: required field is missing; FIX"
// A cursor refers to the json value and the source: both must outlive it. `fix`, when given (a
// string literal), ends every wrong-kind and out-of-range message ("...; FIX"); the cursors of
// members and elements inherit it.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "shardcal/formats/json.hpp"

namespace shardcal::formats {

// "a string", "an integer", "null", ...: a value's JSON kind as messages name it.
std::string json_kind(const nlohmann::json& v);
// A value as messages quote it: its JSON text, cut to about 60 characters.
std::string json_quote(const nlohmann::json& v);
// The first at most n bytes of s, shortened to a whole UTF-8 character: an error message cut
// inside one is not valid UTF-8 (Python's binding would print nothing).
std::string utf8_prefix(const std::string& s, std::size_t n);

class JsonCursor {
 public:
  JsonCursor(const JsonSource& src, const nlohmann::json& value, std::string pointer = {},
             const char* fix = nullptr)
      : src_(&src), v_(&value), ptr_(std::move(pointer)), fix_(fix) {}

  const nlohmann::json& json() const { return *v_; }
  const std::string& pointer() const { return ptr_; }
  const JsonSource& source() const { return *src_; }
  bool is_null() const { return v_->is_null(); }

  // Throws shardcal::Error "origin: /pointer: what (line L)" (JsonSource::fail).
  [[noreturn]] void fail(const std::string& what) const;
  // The same with the cursor's fix appended, if it has one.
  [[noreturn]] void fail_with_fix(const std::string& what) const;

  // -- members and elements ----------------------------------------------------------------
  // The member `key`, which must be present (null counts as present): "required field is
  // missing" plus `fix` (what to do) when it is not. The value itself must be an object.
  JsonCursor required(const std::string& key, const std::string& fix) const;
  // The member `key`, or nullopt when absent. The value itself must be an object.
  std::optional<JsonCursor> optional(const std::string& key) const;
  // Element i of an array (the caller checked the bounds via array()).
  JsonCursor operator[](std::size_t i) const;
  std::size_t size() const { return v_->size(); }
  // Every member's key must be in `allowed` (keys in `ignored` are accepted silently):
  // "unknown key \"k\"; expected one of a, b, c" plus `fix` when given.
  void expect_keys(std::initializer_list<const char*> allowed, const std::string& fix = {},
                   std::initializer_list<const char*> ignored = {}) const;
  // The same for a list built at run time (e.g. from a table of members).
  void expect_keys(std::span<const char* const> allowed, const std::string& fix,
                   std::span<const char* const> ignored = {}) const;

  // -- typed values (each fails "expected KIND, got KIND (VALUE)" on another kind) ---------------
  const JsonCursor& object() const;
  // An array; with `non_empty`, "the list is empty; give at least one entry" for [].
  const JsonCursor& array(bool non_empty = false) const;
  std::string string() const;
  bool boolean() const;
  // A JSON integer (1.0 is not one) with lo <= value <= hi.
  std::int64_t integer(std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const;
  // A whole number, written as an integer or as a number without a fraction (4.0, 1e3).
  std::int64_t whole_number(std::int64_t lo, std::int64_t hi) const;
  // A number with lo <= value <= hi (lo < value with `lo_open`); hi may be infinity.
  double number(double lo = -std::numeric_limits<double>::infinity(),
                double hi = std::numeric_limits<double>::infinity(), bool lo_open = false) const;

  // -- shorthands: required(key, fix).T(...) --------------------------------------------------
  std::string string_at(const std::string& key, const std::string& fix) const {
    return required(key, fix).string();
  }
  std::int64_t integer_at(const std::string& key, const std::string& fix, std::int64_t lo,
                          std::int64_t hi) const {
    return required(key, fix).integer(lo, hi);
  }
  double number_at(const std::string& key, const std::string& fix, double lo,
                   double hi = std::numeric_limits<double>::infinity()) const {
    return required(key, fix).number(lo, hi);
  }

 private:
  [[noreturn]] void wrong_kind(const char* expected) const;
  [[noreturn]] void out_of_range(const std::string& value, const std::string& bounds) const;

  const JsonSource* src_;
  const nlohmann::json* v_;
  std::string ptr_;
  const char* fix_;
};

}  // namespace shardcal::formats
