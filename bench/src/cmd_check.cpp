// `shardbench check --profile P --results R.jsonl...`: is this still the cluster the profile
// describes? Every collective call of the results (a job's imported trace, a sweep, an imported
// nccl-tests log) is priced with the profile's predict (calibrate/profile.hpp) and compared with
// its 95 % prediction interval, per link class (collective, group size, hosts, concurrency) and
// size band (octaves of the table's S). docs/CHECK.md.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "shardcal/calibrate/loaded_profile.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/formats/results_reader.hpp"

namespace shardbench {
namespace check_cmd {
namespace {

using nlohmann::json;
namespace calib = shardcal::calib;
namespace fm = shardcal::formats;
using shardcal::Error;

struct CheckArgs {
  std::string profile;
  std::vector<std::string> results;
  std::string json_out, markdown_out;
  int min_calls = 5;
  int min_points = 2;
  double max_outside = 0.5;
  double alpha = 0;  // 0: the binomial test off (see --alpha)
};

// The share of a 95 % interval's points expected above it (or below it) when nothing changed.
constexpr double kTailRate = 0.025;

// P(X >= k) for X ~ Binomial(n, p), summed term by term in logs (lgamma): the chance that k or
// more of n points lie above their 95 % interval (p = 0.025) on a cluster that still matches
// its profile. The one-sided binomial test (e.g. Wasserman, All of Statistics, 10.1).
double binom_tail(int k, int n, double p) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  const double lp = std::log(p), lq = std::log1p(-p), ln = std::lgamma(double(n) + 1);
  double s = 0;
  for (int i = k; i <= n; ++i) {
    const double t = std::exp(ln - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) +
                              double(i) * lp + double(n - i) * lq);
    s += t;
    if (t < s * 1e-17) break;  // the terms only shrink past the mode (k > n p here)
  }
  return std::min(1.0, s);
}

// One group of calls (a class, or a size band of one).
//
// The profile's 95 % interval is the interval of a size's *median* time (docs/CALIBRATION.md
// "Prediction intervals"), so a point is judged by the median of its calls against it; single
// calls scatter beyond it (reported: share_above / share_below). A band, group or class is
// slower when more points have their median above the interval than a cluster matching its
// profile makes plausible: more than --max-outside of them above, or (--alpha > 0)
// P(X >= above | points, 2.5 %) below --alpha (divided over the class's tests, Bonferroni).
//
// A call's sample from all of its group's ranks (min over ranks, a sweep's or a benchmark's
// sample) is the collective's own time: judged two-sided. A sample from fewer ranks (one rank's
// trace) includes that rank's wait for the last one to arrive: an upper bound of the
// collective's time. An upper bound at or below the interval's top says "no slower than the
// profile"; above it, it says nothing (the wait or drift, one cannot tell); it never says
// "faster" (docs/CHECK.md "One-sided").
struct Tally {
  std::vector<double> ratios;  // measured / priced, per call
  int above = 0, below = 0;    // calls outside the 95 % interval
  int one_sided_calls = 0;     // calls that are upper bounds
  int extrapolated = 0;        // calls priced outside the profile's measured domain
  // Per point: its median call against the interval.
  int two_sided = 0, two_sided_above = 0, two_sided_below = 0;
  int one_sided = 0, one_sided_not_above = 0;
  std::set<std::string> points;

  void add_point(const std::vector<double>& us, double priced, double lo_us, double hi_us,
                 bool upper_bound, bool extrapolated_price, const std::string& point) {
    for (double u : us) {
      ratios.push_back(u / priced);
      above += u > hi_us;
      below += u < lo_us;
    }
    const int n = int(us.size());
    if (upper_bound) one_sided_calls += n;
    if (extrapolated_price) extrapolated += n;
    const double med = fm::median(us);
    if (upper_bound) {
      ++one_sided;
      one_sided_not_above += med <= hi_us;
    } else {
      ++two_sided;
      two_sided_above += med > hi_us;
      two_sided_below += med < lo_us;
    }
    points.insert(point);
  }
  int calls() const { return int(ratios.size()); }
  double median_ratio() const { return ratios.empty() ? 0.0 : fm::median(ratios); }
  double share_above() const { return ratios.empty() ? 0.0 : double(above) / double(calls()); }
  double share_below() const { return ratios.empty() ? 0.0 : double(below) / double(calls()); }
  // slower | faster | within | no slower than (one-sided) | inconclusive | inconclusive
  // (upper bounds above the interval)
  double p_above() const { return binom_tail(two_sided_above, two_sided, kTailRate); }
  double p_below() const { return binom_tail(two_sided_below, two_sided, kTailRate); }
  // alpha: the significance of this test (--alpha over the class's tests).
  std::string verdict(const CheckArgs& a, double alpha) const {
    // One point alone is never a verdict: with 95 % intervals, 1 in 40 points of a cluster
    // that matches its profile lies above (a band of one point would flag it).
    if (calls() < a.min_calls || int(points.size()) < a.min_points) return "inconclusive";
    if (two_sided >= a.min_points) {
      if (double(two_sided_above) / two_sided > a.max_outside || (alpha > 0 && p_above() < alpha))
        return "slower";
      if (double(two_sided_below) / two_sided > a.max_outside || (alpha > 0 && p_below() < alpha))
        return "faster";
      return "within";
    }
    if (one_sided < a.min_points) return "inconclusive";
    if (double(one_sided_not_above) / one_sided > a.max_outside) return "no slower than (one-sided)";
    return "inconclusive (upper bounds above the interval)";
  }
  json to_json(const CheckArgs& a, double alpha) const {
    return {{"calls", calls()},
            {"points", points.size()},
            {"points_above", two_sided_above},
            {"points_below", two_sided_below},
            {"p_above", p_above()},
            {"p_below", p_below()},
            {"median_ratio", median_ratio()},
            {"share_above", share_above()},
            {"share_below", share_below()},
            {"one_sided_calls", one_sided_calls},
            {"extrapolated_calls", extrapolated},
            {"verdict", verdict(a, alpha)}};
  }
};

struct ClassKey {
  std::string collective;
  int group_size, hosts, concurrent_groups;
  auto tie() const { return std::tie(collective, group_size, hosts, concurrent_groups); }
  bool operator<(const ClassKey& o) const { return tie() < o.tie(); }
  std::string text() const {
    return collective + " n=" + std::to_string(group_size) + " hosts=" + std::to_string(hosts) +
           " concurrency=" + std::to_string(concurrent_groups);
  }
};

std::string bytes_text(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  std::ostringstream s;
  s << std::setprecision(4) << b << " " << unit[u];
  return s.str();
}

std::string band_text(int k) {
  return bytes_text(std::ldexp(1.0, k)) + " - " + bytes_text(std::ldexp(1.0, k + 1));
}

std::string sci(double x) {
  std::ostringstream s;
  s << std::setprecision(2) << x;
  return s.str();
}

std::string fixed(double x, int d) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(d) << x;
  return s.str();
}

// What check reads from a point record beyond results_reader's CollectivePoint: its import
// block (an imported trace's point): whether its samples are upper bounds (import.one_sided)
// and its process group's ranks (import.process_group.ranks).
struct ImportInfo {
  bool one_sided = false;
  std::string group;  // "0,4"; empty when the record names no group
};

// Per "file:line" of the records with an import block, read from the parsed record (however
// the file is formatted: a file rewritten by json.dumps keeps its flags).
std::map<std::string, ImportInfo> import_info(const std::vector<std::string>& paths) {
  std::map<std::string, ImportInfo> out;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find("\"import\"") == std::string::npos) continue;  // no import block at all
      const json j = json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("import") || !j["import"].is_object()) continue;
      const json& im = j["import"];
      ImportInfo info;
      if (auto it = im.find("one_sided"); it != im.end() && it->is_boolean()) info.one_sided = it->get<bool>();
      if (auto it = im.find("process_group"); it != im.end() && it->is_object())
        if (auto r = it->find("ranks"); r != it->end() && r->is_array())
          for (const json& x : *r)
            if (x.is_number_integer())
              info.group += (info.group.empty() ? "" : ",") + std::to_string(x.get<std::int64_t>());
      out[path + ":" + std::to_string(n)] = info;
    }
  }
  return out;
}

std::string profile_mode(const calib::Profile& p) {
  if (p.json_extra.empty()) return "";
  const json j = json::parse(p.json_extra, nullptr, false);
  if (j.is_object() && j.contains("provenance") && j["provenance"].is_object())
    return j["provenance"].value("timing_mode", "");
  return "";
}

int run(const CheckArgs& a) {
  if (a.min_calls < 1) throw Error("--min-calls must be at least 1");
  if (a.min_points < 1) throw Error("--min-points must be at least 1");
  if (!(a.max_outside > 0 && a.max_outside < 1))
    throw Error("--max-outside must be a fraction between 0 and 1 (default 0.5)");
  if (!(a.alpha >= 0 && a.alpha < 1))
    throw Error("--alpha must be a probability between 0 and 1 (0, the default: the test off)");
  const auto loaded = calib::LoadedProfile::load(a.profile, "--profile");
  const calib::Profile& profile = loaded->profile();
  const fm::ResultSet rs = fm::read_results(a.results);
  if (rs.backend != profile.backend || rs.memory != profile.memory)
    throw Error("nothing comparable: the results are " + rs.backend + "/" + rs.memory +
                ", the profile " + profile.backend + "/" + profile.memory +
                " (backend/memory); check against a profile of the same backend");
  const std::map<std::string, ImportInfo> imported = import_info(a.results);
  const std::string pmode = profile_mode(profile);

  std::map<ClassKey, Tally> classes;
  std::map<ClassKey, std::map<int, Tally>> bands;
  std::map<ClassKey, std::map<std::string, Tally>> groups;  // per process group (imported traces)
  std::map<ClassKey, json> class_points;  // per class: each point's calls and price (figure)
  std::map<std::string, int> unpriced;  // why -> points
  std::set<std::string> modes;
  int priced_points = 0;
  for (const fm::CollectivePoint& p : rs.collectives) {
    modes.insert(p.mode);
    calib::LinkClass lc;
    lc.group_size = p.group_size;
    lc.hosts = p.hosts_spanned;
    lc.ranks_per_host = std::max(1, p.group_size / std::max(1, p.hosts_spanned));
    lc.concurrent_groups = p.concurrent_groups;
    calib::Prediction pr;
    try {
      std::vector<std::int64_t> counts;
      if (p.uneven) counts = p.counts;
      pr = calib::predict(profile, p.op, lc, p.bytes, counts, p.elem_size, p.dtype);
    } catch (const Error& e) {
      ++unpriced[e.what()];
      continue;
    }
    if (!std::isfinite(pr.time_us) || pr.time_us <= 0) {
      ++unpriced["no model for " + std::string(shardcal::collective_info(p.op).name)];
      continue;
    }
    // A class the profile did not measure (another host count, concurrency or group size
    // outside its models) is not compared: its price is a transport, not the cluster's curve.
    if (pr.extrapolated && pr.model &&
        (pr.model->hosts != lc.hosts || pr.model->concurrent_groups != lc.concurrent_groups ||
         pr.model->group_sizes.empty() || lc.group_size < pr.model->group_sizes.front() ||
         lc.group_size > pr.model->group_sizes.back())) {
      ++unpriced["link class not in the profile (" + std::string(shardcal::collective_info(p.op).name) +
                 " n=" + std::to_string(lc.group_size) + " hosts=" + std::to_string(lc.hosts) +
                 " concurrency=" + std::to_string(lc.concurrent_groups) + ")"];
      continue;
    }
    ++priced_points;
    const ClassKey ck{std::string(shardcal::collective_info(p.op).name), p.group_size,
                      p.hosts_spanned, p.concurrent_groups};
    const int band = int(std::floor(std::log2(std::max(1.0, p.bytes))));
    const auto info = imported.find(p.where);
    const bool one_sided = info != imported.end() && info->second.one_sided;
    const std::string group = info != imported.end() ? info->second.group : std::string();
    json samples_us = json::array();
    for (double s : p.samples_s) samples_us.push_back(s * 1e6);
    class_points[ck].push_back({{"where", p.where},
                                {"bytes", p.bytes},
                                {"dtype", std::string(shardcal::dtype_name(p.dtype))},
                                {"mode", p.mode},
                                {"priced_us", pr.time_us},
                                {"lo_us", pr.lo_us},
                                {"hi_us", pr.hi_us},
                                {"extrapolated", pr.extrapolated},
                                {"one_sided", one_sided},
                                {"samples_us", samples_us}});
    std::vector<double> us;
    for (double s : p.samples_s) us.push_back(s * 1e6);
    classes[ck].add_point(us, pr.time_us, pr.lo_us, pr.hi_us, one_sided, pr.extrapolated, p.where);
    bands[ck][band].add_point(us, pr.time_us, pr.lo_us, pr.hi_us, one_sided, pr.extrapolated,
                              p.where);
    if (!group.empty())
      groups[ck][group].add_point(us, pr.time_us, pr.lo_us, pr.hi_us, one_sided, pr.extrapolated,
                                  p.where);
  }
  if (priced_points == 0) {
    std::string why;
    for (const auto& [w, n] : unpriced) why += (why.empty() ? "" : "; ") + std::to_string(n) + " point(s): " + w;
    throw Error("nothing comparable: " + std::to_string(rs.collectives.size()) +
                " collective point(s) in the results, none priced by the profile" +
                (why.empty() ? std::string("") : " (" + why + ")") +
                "; check a profile of the same backend and collectives");
  }

  // Verdicts: a class is slower when it is as a whole or in any size band.
  int n_slower = 0, n_within = 0, n_inconclusive = 0, n_faster = 0;
  json jclasses = json::array();
  std::vector<std::string> slower_lines;
  std::ostringstream table, md;
  table << std::left << std::setw(46) << "class" << std::setw(22) << "size band" << std::right
        << std::setw(7) << "calls" << std::setw(8) << "points" << std::setw(9) << "median"
        << std::setw(10) << "pts>hi" << std::setw(10) << "calls>hi" << std::setw(10) << "calls<lo"
        << "  verdict\n";
  md << "| class | size band | calls | points | median measured/priced | points above 95 % | calls "
        "above | calls below | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  auto row = [&](const std::string& cls, const std::string& band, const Tally& t,
                 const std::string& v, bool bold) {
    const std::string pts = std::to_string(t.two_sided_above) + "/" + std::to_string(t.two_sided);
    table << std::left << std::setw(46) << cls << std::setw(22) << band << std::right
          << std::setw(7) << t.calls() << std::setw(8) << t.points.size() << std::setw(9)
          << fixed(t.median_ratio(), 2) + "x" << std::setw(10) << pts << std::setw(10) << t.above
          << std::setw(10) << t.below << "  " << v << "\n";
    const std::string b = bold ? "**" : "";
    md << "| " << b << cls << b << " | " << band << " | " << t.calls() << " | " << t.points.size()
       << " | " << fixed(t.median_ratio(), 2) << " | " << pts << " | " << t.above << " | "
       << t.below << " | " << b << v << b << " |\n";
  };
  for (const auto& entry : classes) {
    const ClassKey& ck = entry.first;  // a plain reference: clang 14 cannot capture bindings
    const Tally& t = entry.second;
    // The class's tests: itself, each size band, and each process group when it has several
    // (one group: the class itself). --alpha is shared among them (Bonferroni).
    const auto& cgroups = groups[ck];
    const bool by_group = cgroups.size() > 1;
    const double alpha =
        a.alpha / double(1 + bands[ck].size() + (by_group ? cgroups.size() : 0));
    auto slower_line = [&](const std::string& what, const Tally& x) {
      slower_lines.push_back(what + ": median " + fixed(x.median_ratio(), 2) +
                             "x the profile's price, " + std::to_string(x.two_sided_above) +
                             " of " + std::to_string(x.two_sided) +
                             " point(s) above its 95 % interval (P = " + sci(x.p_above()) +
                             " with no change; " + std::to_string(x.above) + " of " +
                             std::to_string(x.calls()) + " calls)");
    };
    const std::string whole = t.verdict(a, alpha);
    std::string cv = whole;
    bool named = false;
    json jb = json::array();
    for (const auto& [k, b] : bands[ck]) {
      const std::string bv = b.verdict(a, alpha);
      if (bv == "slower") {
        cv = "slower";
        named = true;
        slower_line(ck.text() + " at " + band_text(k), b);
      }
      json jbj = b.to_json(a, alpha);
      jbj["lo_bytes"] = std::ldexp(1.0, k);
      jbj["hi_bytes"] = std::ldexp(1.0, k + 1);
      jb.push_back(jbj);
      row(ck.text(), band_text(k), b, bv, false);
    }
    json jg = json::array();
    if (by_group)
      for (const auto& [g, gt] : cgroups) {
        const std::string gv = gt.verdict(a, alpha);
        if (gv == "slower") {
          cv = "slower";
          named = true;
          slower_line(ck.text() + " process group [" + g + "]", gt);
        }
        json jgj = gt.to_json(a, alpha);
        jgj["ranks"] = g;
        jg.push_back(jgj);
        row(ck.text(), "group [" + g + "]", gt, gv, false);
      }
    if (whole == "slower" && !named) slower_line(ck.text() + " (all sizes)", t);
    row(ck.text(), "(all sizes)", t, cv, true);
    if (cv == "slower") ++n_slower;
    else if (cv.rfind("inconclusive", 0) == 0) ++n_inconclusive;
    else if (cv == "faster") ++n_faster;
    else ++n_within;
    json jc = t.to_json(a, alpha);
    jc["collective"] = ck.collective;
    jc["group_size"] = ck.group_size;
    jc["hosts"] = ck.hosts;
    jc["concurrent_groups"] = ck.concurrent_groups;
    jc["verdict"] = cv;
    jc["bands"] = jb;
    jc["groups"] = jg;
    jc["alpha"] = alpha;
    jc["point_calls"] = class_points[ck];
    jclasses.push_back(jc);
  }
  const int code = n_slower > 0 ? 1 : (n_within + n_faster == 0 ? 3 : 0);
  const std::string verdict = code == 1 ? "slower" : code == 3 ? "inconclusive" : "within";

  std::cout << table.str();
  std::set<std::string> other_modes = modes;
  other_modes.erase(pmode);
  if (!pmode.empty() && !other_modes.empty()) {
    std::string ms;
    for (const auto& m : other_modes) ms += (ms.empty() ? "" : ", ") + m;
    std::cout << "check: the profile describes timing mode " << pmode << "; the results hold "
              << ms << " (compared all the same: a job's in-job kernels against a benchmark's "
                       "profile is what check is for)\n";
  }
  for (const auto& [w, n] : unpriced) std::cout << "check: " << n << " point(s) not priced: " << w << "\n";
  if (!rs.transitions.empty())
    std::cout << "check: " << rs.transitions.size() << " transition point(s) not checked (collectives only)\n";
  for (const std::string& l : slower_lines) std::cout << "slower than the profile: " << l << "\n";
  std::cout << "check: " << classes.size() << " class(es): " << n_within << " within, "
            << n_slower << " slower, " << n_faster << " faster, " << n_inconclusive
            << " inconclusive (fewer than " << a.min_calls << " calls or " << a.min_points
            << " points) -> " << verdict
            << " (exit " << code << ")\n";

  std::vector<std::pair<std::string, std::string>> files;
  if (!a.json_out.empty()) {
    json results = json::array();
    for (const auto& f : rs.files) results.push_back({{"path", f.path}, {"sha256", f.sha256}});
    json unp = json::object();
    for (const auto& [w, n] : unpriced) unp[w] = n;
    const json doc = {{"schema", "shardcal.check"},
                      {"version", 1},
                      {"profile", {{"path", loaded->path()},
                                   {"cluster", profile.cluster},
                                   {"sha256", loaded->sha256()},
                                   {"timing_mode", pmode}}},
                      {"results", results},
                      {"min_calls", a.min_calls},
                      {"min_points", a.min_points},
                      {"max_outside", a.max_outside},
                      {"alpha", a.alpha},
                      {"classes", jclasses},
                      {"unpriced", unp},
                      {"slower", slower_lines},
                      {"verdict", verdict},
                      {"exit", code}};
    files.emplace_back(a.json_out, doc.dump(1) + "\n");
  }
  if (!a.markdown_out.empty()) {
    std::string text = "# shardbench check\n\nProfile `" + loaded->path() + "` (cluster " +
                       profile.cluster + ", mode " + (pmode.empty() ? "?" : pmode) + ")\n\n" +
                       md.str() + "\n**" + verdict + "** (exit " + std::to_string(code) + ")\n";
    for (const std::string& l : slower_lines) text += "\n- slower: " + l;
    files.emplace_back(a.markdown_out, text + "\n");
  }
  if (!files.empty()) fm::write_texts_atomic(files);
  return code;
}

}  // namespace
}  // namespace check_cmd

Runner add_check_command(CLI::App& app) {
  auto args = std::make_shared<check_cmd::CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Is this still the cluster the profile describes? Prices every collective call of the "
      "results (an imported torch.profiler trace, a sweep, an imported benchmark log) with the "
      "profile and compares it with the price's 95 % interval, per class (collective, group "
      "size, hosts, concurrency) and octave of size (docs/CHECK.md). Exit 0 within the profile, "
      "1 slower than it (the classes named), 2 bad input or nothing comparable, 3 inconclusive "
      "(too few calls). Calls from one rank's trace are upper bounds (its kernel waits for the "
      "others): judged one-sided, 'no slower than' or inconclusive, never slower or faster.");
  cmd->add_option("--profile", args->profile, profile_option_help())->required();
  cmd->add_option("--results", args->results, "Results files (JSON Lines) to check")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--json", args->json_out, "Write the verdicts as JSON (written atomically)");
  cmd->add_option("--markdown", args->markdown_out, "Write the table as Markdown");
  cmd->add_option("--min-calls", args->min_calls,
                  "Calls a class or size band needs for a verdict (fewer: inconclusive)")
      ->capture_default_str();
  cmd->add_option("--min-points", args->min_points,
                  "Points (sizes, dtypes, groups) a class or size band needs for a verdict")
      ->capture_default_str();
  cmd->add_option("--max-outside", args->max_outside,
                  "Also slower when more than this share of the points (each judged by its "
                  "median call) lie above the 95 % interval")
      ->capture_default_str();
  cmd->add_option("--alpha", args->alpha,
                  "Slower when the points above the 95 % interval are this improbable with no "
                  "change (one-sided binomial test at 2.5 %; shared among a class's bands and "
                  "process groups; 0, the default: off, a profile's intervals under-cover)")
      ->capture_default_str();
  return [args] { return check_cmd::run(*args); };
}

}  // namespace shardbench
