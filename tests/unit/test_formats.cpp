// The formats library: the schema/link-class table shared with Python, the JSON layer's error
// locations, atomic writes, the median and the hash.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"
#include "shardcal/formats/link_class.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/hash.hpp"

namespace fs = std::filesystem;
namespace f = shardcal::formats;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const shardcal::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(FormatsTable, PythonTableMatchesTheCxxDefinitions) {
  const auto j = nlohmann::json::parse(slurp(SHARDCAL_FORMATS_JSON));
  const auto& s = j.at("schemas");
  EXPECT_EQ(s.at("results").at("schema"), f::kResultsSchema);
  EXPECT_EQ(s.at("results").at("version"), f::kResultsVersion);
  EXPECT_EQ(s.at("profile").at("schema"), f::kProfileSchema);
  EXPECT_EQ(s.at("profile").at("version"), f::kProfileVersion);
  EXPECT_EQ(s.at("gate").at("schema"), f::kGateSchema);
  EXPECT_EQ(s.at("gate").at("version"), f::kGateVersion);
  EXPECT_EQ(s.at("validate").at("schema"), f::kValidateSchema);
  EXPECT_EQ(s.at("validate").at("version"), f::kValidateVersion);
  EXPECT_EQ(s.at("validate_summary").at("schema"), f::kValidateSummarySchema);
  EXPECT_EQ(s.at("validate_summary").at("version"), f::kValidateVersion);  // one version for both
  const auto& ex = j.at("link_class").at("concurrent_groups").at("examples");
  ASSERT_GE(ex.size(), 5u);
  for (const auto& e : ex)
    EXPECT_EQ(f::concurrent_groups(e.at("groups"), e.at("hosts_spanned"), e.at("n_hosts")),
              e.at("concurrent_groups").get<int>())
        << e.dump();
}

// formats.json states the rule as data that the Python report evaluates (it does not restate
// it): the C++ rule must give what that data gives, over a grid wider than the examples.
TEST(FormatsTable, LinkClassDefinitionIsTheCxxRule) {
  const auto j = nlohmann::json::parse(slurp(SHARDCAL_FORMATS_JSON));
  const auto& d = j.at("link_class").at("concurrent_groups").at("definition");
  ASSERT_EQ(d.at("rounding"), "half_away_from_zero");
  for (int groups = 1; groups <= 16; ++groups)
    for (int hosts_spanned = 1; hosts_spanned <= 8; ++hosts_spanned)
      for (int n_hosts = 0; n_hosts <= 8; ++n_hosts) {
        const std::map<std::string, int> in{
            {"groups", groups}, {"hosts_spanned", hosts_spanned}, {"n_hosts", n_hosts}};
        double v = 1;
        for (const auto& k : d.at("product_of")) v *= in.at(k.get<std::string>());
        v /= std::max(d.at("divisor_at_least").get<int>(), in.at(d.at("divided_by").get<std::string>()));
        const int want = std::max(d.at("at_least").get<int>(), int(std::round(v)));
        ASSERT_EQ(f::concurrent_groups(groups, hosts_spanned, n_hosts), want)
            << groups << " " << hosts_spanned << " " << n_hosts;
      }
}

// One set of typed getters for every reader: the same words for the same mistake, with the file,
// the JSON pointer and (in a file of several lines) the line.
TEST(JsonCursor, TypedGettersNameFileFieldAndLine) {
  const std::string text =
      "{\n  \"n\": 3,\n  \"s\": \"x\",\n  \"f\": 2.0,\n  \"big\": 18446744073709551615,\n"
      "  \"l\": [],\n  \"o\": {\"a/b\": true}\n}\n";
  const auto doc = nlohmann::json::parse(text);
  const f::JsonSource src("c.json", text);
  const f::JsonCursor c(src, doc);
  EXPECT_EQ(c.integer_at("n", "", 0, 10), 3);
  EXPECT_EQ(c.string_at("s", ""), "x");
  EXPECT_EQ(c.required("f", "").whole_number(0, 10), 2);
  EXPECT_TRUE(c.required("o", "").required("a/b", "").boolean());
  EXPECT_FALSE(c.optional("nope"));
  EXPECT_EQ(error_of([&] { c.required("nope", "add it"); }),
            "c.json: /nope: required field is missing; add it");
  EXPECT_EQ(error_of([&] { c.required("s", "").integer(); }),
            "c.json: /s: expected an integer, got a string (\"x\") (line 3)");
  EXPECT_EQ(error_of([&] { c.required("f", "").integer(); }),
            "c.json: /f: expected an integer, got a number (2.0) (line 4)");
  EXPECT_EQ(error_of([&] { c.integer_at("n", "", 4, 10); }),
            "c.json: /n: value 3 is out of range; expected 4 <= value <= 10 (line 2)");
  EXPECT_EQ(error_of([&] { c.required("big", "").integer(0, 100); }),
            "c.json: /big: value 18446744073709551615 is out of range; expected 0 <= value <= 100 (line 5)");
  EXPECT_EQ(error_of([&] { c.required("n", "").number(3, 10, true); }),
            "c.json: /n: value 3 is out of range; expected 3 < value <= 10 (line 2)");
  EXPECT_EQ(error_of([&] { c.required("n", "").number(5); }),
            "c.json: /n: value 3 is out of range; expected value >= 5 (line 2)");
  EXPECT_EQ(error_of([&] { c.required("l", "").array(true); }),
            "c.json: /l: the list is empty; give at least one entry (line 6)");
  EXPECT_EQ(error_of([&] { c.required("o", "").required("a/b", "").string(); }),
            "c.json: /o/a~1b: expected a string, got a boolean (true) (line 7)");
  EXPECT_EQ(error_of([&] { c.expect_keys({"n", "s"}, "", {"f", "big", "l"}); }),
            "c.json: /o: unknown key \"o\"; expected one of n, s (line 7)");
  EXPECT_EQ(error_of([&] { c.required("s", "").required("x", ""); }),
            "c.json: /s: expected an object, got a string (\"x\") (line 3)");
  // A cursor's fix ends its wrong-kind and out-of-range messages, and its members inherit it.
  const f::JsonCursor fixing(src, doc, {}, "fix it");
  EXPECT_EQ(error_of([&] { fixing.required("s", "").integer(); }),
            "c.json: /s: expected an integer, got a string (\"x\"); fix it (line 3)");
  EXPECT_EQ(error_of([&] { fixing.required("l", "").array(true); }),
            "c.json: /l: the list is empty; give at least one entry; fix it (line 6)");
  // A whole number written as a float far outside the range is out of range, never a wrapped
  // integer.
  const auto huge = nlohmann::json::parse("1e30");
  EXPECT_EQ(error_of([&] { f::JsonCursor(src, huge, "/h").whole_number(0, 10); }),
            "c.json: /h: value 1e+30 is out of range; expected 0 <= value <= 10");
}

TEST(FormatsJson, LocatesValuesByPointer) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": [\n    {\"c\": \"x\"},\n    7\n  ],\n  \"d/e\": {}\n}\n";
  EXPECT_EQ(f::line_of(text, ""), 1);
  EXPECT_EQ(f::line_of(text, "/a"), 2);
  EXPECT_EQ(f::line_of(text, "/b"), 3);
  EXPECT_EQ(f::line_of(text, "/b/0/c"), 4);
  EXPECT_EQ(f::line_of(text, "/b/1"), 5);
  EXPECT_EQ(f::line_of(text, "/d~1e"), 7);
  EXPECT_EQ(f::line_of(text, "/nope"), 0);
  const f::JsonSource src("x.json", text);
  EXPECT_EQ(error_of([&] { src.fail("/b/1", "too big"); }), "x.json: /b/1: too big (line 5)");
  // A one-line document: the line says nothing.
  EXPECT_EQ(error_of([] { f::JsonSource("y.json", "{\"a\": 1}").fail("/a", "bad"); }), "y.json: /a: bad");
}

TEST(FormatsJson, OutOfRangeNumberIsBadInputNamingLineAndField) {
  const std::string text = "{\n  \"sizes\": [8,\n    1e999]\n}";
  const f::JsonLocation loc = f::find_out_of_range_number(text);
  EXPECT_EQ(loc.line, 3);
  EXPECT_EQ(loc.pointer, "/sizes/1");
  EXPECT_EQ(error_of([&] { (void)f::parse_json(text, "c.json", "fix it"); }),
            "c.json: line 3: a number is outside the range of a double (field /sizes/1); use a "
            "finite value; fix it");
  EXPECT_EQ(f::find_out_of_range_number("[1e300, -2.5e-400]").line, 0);  // underflow is fine
  EXPECT_EQ(f::find_out_of_range_number("[-1e400]").pointer, "/0");
  EXPECT_NE(error_of([] { (void)f::parse_json("{\n\"a\": [1,]}", "s.json", ""); })
                .find("s.json: line 2, column 9: invalid JSON: syntax error"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)f::parse_json("[[[[1]]]]", "d.json", "", 3); }).find("nested deeper than 3"),
            std::string::npos);
}

TEST(FormatsAtomicWrite, WholeFileOrNothing) {
  const fs::path dir = fs::temp_directory_path() / ("shardcal_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string a = (dir / "a.txt").string(), b = (dir / "b.txt").string();
  f::write_texts_atomic({{a, "first"}, {b, "second"}});
  EXPECT_EQ(slurp(a), "first");
  EXPECT_EQ(slurp(b), "second");
  // A directory as a target: nothing is written, no temporary file is left.
  EXPECT_NE(error_of([&] { f::write_texts_atomic({{a, "new"}, {dir.string(), "x"}}); }).find("is a directory"),
            std::string::npos);
  EXPECT_EQ(slurp(a), "first");
  {
    f::AtomicFile file(a);
    file.stream() << "abandoned";
  }  // destroyed uncommitted
  EXPECT_EQ(slurp(a), "first");
  {
    // Misuse is a clear error, not undefined behaviour.
    f::AtomicFile file(a);
    file.stream() << "third";
    file.commit();
    EXPECT_NE(error_of([&] { file.commit(); }).find("committed twice"), std::string::npos);
    EXPECT_NE(error_of([&] { file.stream() << "more"; }).find("after it was finished"),
              std::string::npos);
  }
  EXPECT_EQ(slurp(a), "third");
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 2u);  // a.txt, b.txt: no temporary files
  fs::remove_all(dir);
}

TEST(FormatsMedian, NumpyMedianAndStableHash) {
  const std::vector<double> odd{3, 1, 2}, even{4, 1, 3, 2};
  EXPECT_EQ(f::median(odd), 2.0);
  EXPECT_EQ(f::median(even), 2.5);
  EXPECT_EQ(f::median_or_zero({}), 0.0);
  EXPECT_THROW((void)f::median(std::vector<double>{}), shardcal::Error);
  // FNV-1a 64 reference values (draft-eastlake-fnv): "" and "a".
  EXPECT_EQ(shardcal::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(shardcal::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}
