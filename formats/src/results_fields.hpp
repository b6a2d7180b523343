#pragma once
// The results reader's fields, typed from the writer's field list (issue 45): formats/formats.json
// "results_point" -- which the unit test ResultsRecord holds the one writer (results_record.cpp)
// to -- generated into C++ rows at configure time (cmake/ResultsFields.cmake). The reader names
// every point-record, "point" and context field it reads through the functions below, which look
// the name up at compile time: a field the list lacks, or one the list says its kind does not
// have, does not compile; the least value a number may take comes from the list. So a field is
// added to the list first, and then both sides see it (the test formats.results_fields_compile
// checks that a field the list lacks does not compile).
#include <cstdint>
#include <limits>
#include <string_view>

namespace shardcal::formats::results_fields {

inline constexpr double kNoLeast = -std::numeric_limits<double>::infinity();

// [name, its type in a collective point, in a transition point, least value] (context fields:
// the one type twice).
struct FieldRow {
  std::string_view name, collective, transition;
  double least;
};

#include "results_fields_table.inc"  // k_fields, k_point, k_context

enum class Kind { Collective, Transition, Any };
enum class List { Fields, Point, Context };

// The type of `name` in `list` for `kind`, without "?" (optional); "absent" when the kind does
// not have it. Not a constant expression (so a compile error where it must be one) when the list
// does not name the field.
consteval std::string_view base_type(std::string_view t) {
  return !t.empty() && t.back() == '?' ? t.substr(0, t.size() - 1) : t;
}
consteval const FieldRow& row(List list, std::string_view name) {
  const auto find = [&](const auto& rows) -> const FieldRow& {
    for (const FieldRow& r : rows)
      if (r.name == name) return r;
    throw "the field is not in formats/formats.json \"results_point\": add it there first";
  };
  return list == List::Fields ? find(k_fields) : list == List::Point ? find(k_point) : find(k_context);
}
consteval std::string_view type_of(List list, std::string_view name, Kind kind) {
  const FieldRow& r = row(list, name);
  const std::string_view c = base_type(r.collective), t = base_type(r.transition);
  if (kind == Kind::Collective) return c;
  if (kind == Kind::Transition) return t;
  return c == "absent" ? t : c;  // Any: a field both kinds share (or either has)
}

// The field's name, checked: listed, present for `kind`, and of a type in `types` ("integer",
// "number|integer", ...: the list's type must be one of them, as a whole or an alternative).
consteval bool type_allowed(std::string_view type, std::string_view types) {
  if (type == types) return true;
  while (!types.empty()) {
    const auto bar = types.find('|');
    if (types.substr(0, bar) == type) return true;
    if (bar == std::string_view::npos) break;
    types.remove_prefix(bar + 1);
  }
  return false;
}
consteval const char* checked(const char* name, List list, Kind kind, std::string_view types) {
  const std::string_view type = type_of(list, name, kind);
  if (type == "absent") throw "formats.json lists the field as absent for this kind of point";
  if (!type_allowed(type, types)) throw "the field's type in formats.json is not what the reader reads";
  return name;
}
consteval double least(const char* name, List list) { return row(list, name).least; }

// A checked field with its least value: what the reader's getters take.
struct Field {
  const char* name;
  double least;
};
consteval Field field(List list, Kind kind, const char* name, std::string_view types) {
  return {checked(name, list, kind, types), least(name, list)};
}

}  // namespace shardcal::formats::results_fields
