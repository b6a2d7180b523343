// ring-routes: the routes a neighbour ring takes on a SimGrid platform, as the table the host
// transport reads (docs/CALIBRATION.md "Other host counts"): for every group of the first H hosts
// of a hostfile (H = 2 .. all), its ring in file order (host i -> host i+1, the last -> the first)
// routed with SimGrid's Host::route_to, and per ring the longest route's latency, each step's
// route latency, the smallest bandwidth share a ring flow gets when all of the ring's routes
// flow at once and how far apart in route latency the flows sharing that link are; and the
// loopback route's latency (two ranks on one host).
//
//   ring-routes --platform XML --hostfile FILE [--out FILE]
//
// An ordinary s4u program (the normal compiler, not smpicxx): it loads the platform and asks for
// routes; it simulates nothing. Output: JSON, format "shardcal-ring-routes/1" (stdout, or --out
// written through a temporary file and a rename). Bad input: one line "ring-routes: error: ..."
// and exit 2.
//
// SimGrid reports many platform errors with xbt_assert (a CRITICAL log line, a backtrace and
// abort()) and dereferences null on a pair of hosts without a route (SimGrid 3.32's Full
// routing), neither of which can be caught. So the SimGrid part runs in a child process whose
// stderr goes to a temporary file: the parent turns an exception, an abort or a crash into one
// error line (the CRITICAL message, or the pair being routed) and writes the result.
#include <fcntl.h>
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/sha256.hpp"

namespace {

using shardcal::Error;
namespace sg4 = simgrid::s4u;

struct Args {
  std::string platform;
  std::string hostfile;
  std::string out;
};

// The host names of a hostfile, the rules of scripts/simulate/host-series.sh: one host per line,
// "name" or "name:slots" (slots ignored; also Open MPI's "name slots=4": the first word), text
// after '#' dropped, blank lines skipped, each name once (its first line).
std::vector<std::string> read_hostfile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("--hostfile " + path + ": no such file");
  std::ifstream in(path);
  if (!in) throw Error("--hostfile " + path + ": cannot read it");
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    if (!(words >> word)) continue;
    word = word.substr(0, word.find(':'));
    if (word.empty() || !seen.insert(word).second) continue;
    hosts.push_back(word);
  }
  if (in.bad()) throw Error("--hostfile " + path + ": cannot read it");
  return hosts;
}

std::string simgrid_version() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  std::string v = std::to_string(major) + "." + std::to_string(minor);
  if (patch != 0) v += "." + std::to_string(patch);
  return v;
}

// Rounded to 1e-6 of the unit (femtoseconds, kB/s): 4 x 0.75 us prints as 3, not 2.9999999999999996.
double tidy(double v) { return std::round(v * 1e6) / 1e6; }

// Writes all of text to fd (a pipe to the parent); false when the parent is gone.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// The child: load the platform and route every ring. Tells the parent through fd, one message a
// line: "R i j" before routing hosts i -> j (so a crash names the pair), "E message" for an
// error, and finally "J" followed by the rings as JSON (the rest of the stream). Never returns.
[[noreturn]] void route_rings(const Args& a, const std::vector<std::string>& names, int fd) {
  int code = 0;
  try {
    // SimGrid's own logging off (reported once, by the parent); the Engine reads --log from argv.
    int sg_argc = 2;
    std::string arg0 = "ring-routes", arg1 = "--log=root.thr:critical";
    char* sg_argv[] = {arg0.data(), arg1.data(), nullptr};
    // Never destroyed: the child ends with _exit, after the parent has its answer.
    auto* engine = new sg4::Engine(&sg_argc, sg_argv);
    write_all(fd, "L\n");
    try {
      engine->load_platform(a.platform);
    } catch (const std::exception& e) {
      throw Error("--platform " + a.platform + ": SimGrid cannot load it: " + one_line(e.what()));
    }
    std::vector<const sg4::Host*> hosts;
    std::vector<std::string> unknown;
    for (const auto& n : names) {
      const sg4::Host* h = engine->host_by_name_or_null(n);
      if (h == nullptr) unknown.push_back(n);
      hosts.push_back(h);
    }
    if (!unknown.empty()) {
      std::string list;
      for (std::size_t i = 0; i < unknown.size() && i < 5; ++i) list += (i ? " " : "") + unknown[i];
      if (unknown.size() > 5) list += " ... (" + std::to_string(unknown.size()) + " in all)";
      throw Error("--hostfile " + a.hostfile + ": not hosts of " + a.platform + ": " + list);
    }

    nlohmann::ordered_json rings = nlohmann::ordered_json::array();
    for (std::size_t n = 2; n <= hosts.size(); ++n) {
      // The ring's n routes, all flowing at once: the route latency of each one crossing each
      // link object (their count is the link's load). A route that lists a link twice counts
      // twice (SimGrid adds its consumption weight twice).
      std::vector<sg4::Link*> route;
      std::map<const sg4::Link*, std::vector<double>> flows;
      double worst_latency = 0;
      nlohmann::ordered_json hops = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = (i + 1) % n;
        write_all(fd, "R " + std::to_string(i) + " " + std::to_string(j) + "\n");
        route.clear();
        double latency = 0;  // route_to adds to it
        hosts[i]->route_to(hosts[j], route, &latency);
        // A Full zone without a route between two hosts answers with no links: not free, absent.
        if (route.empty() && hosts[i] != hosts[j])
          throw Error("no route from " + hosts[i]->get_name() + " to " + hosts[j]->get_name() + " in " +
                      a.platform + ": the ring over the first " + std::to_string(n) +
                      " hosts needs one (add it to the platform, or list the hosts in another order)");
        worst_latency = std::max(worst_latency, latency);
        hops.push_back(tidy(latency * 1e6));
        for (const sg4::Link* l : route) flows[l].push_back(latency * 1e6);
      }
      double share = std::numeric_limits<double>::infinity();
      for (const auto& [link, f] : flows) {
        const double bw = link->get_bandwidth();
        const bool fatpipe = link->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE;
        share = std::min(share, fatpipe ? bw : bw / double(f.size()));
      }
      // The flows that set the share start their transfers as far apart as their route
      // latencies differ. Of several links at the smallest share, the one whose flows are
      // closest: a step waits for its slowest flow, and that link's flows overlap the most.
      double skew = std::numeric_limits<double>::infinity();
      for (const auto& [link, f] : flows) {
        if (link->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE) continue;
        if (link->get_bandwidth() / double(f.size()) > share * (1 + 1e-9)) continue;
        const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
        skew = std::min(skew, *hi - *lo);
      }
      if (!std::isfinite(skew)) skew = 0;  // every link FATPIPE: nothing shared
      nlohmann::ordered_json ring = {{"hosts", n}, {"latency_us", tidy(worst_latency * 1e6)}};
      ring["share_GBps"] = tidy(share / 1e9);  // finite: every route has a link (above)
      ring["share_skew_us"] = tidy(skew);
      ring["hop_latency_us"] = std::move(hops);
      rings.push_back(std::move(ring));
    }
    // Two ranks on one host talk over its loopback route (SimGrid: the cluster's loopback link,
    // else twice the host's private link): the longest over the hosts.
    // Its bandwidth: the narrowest link of the slowest host's loopback route (the eager chain's
    // intra-host hops move their message at it; SimGrid's example clusters' loopback, 100 MB/s,
    // is slower than their 125 MB/s links).
    nlohmann::ordered_json out = {{"rings", std::move(rings)}};
    double loopback = 0, loop_bw = std::numeric_limits<double>::infinity();
    int loop_routes = 0;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      write_all(fd, "R " + std::to_string(i) + " " + std::to_string(i) + "\n");
      std::vector<sg4::Link*> route;
      double latency = 0;
      hosts[i]->route_to(hosts[i], route, &latency);
      if (!route.empty()) {
        ++loop_routes;
        loopback = std::max(loopback, latency);
        for (const sg4::Link* l : route) loop_bw = std::min(loop_bw, l->get_bandwidth());
      }
    }
    // 0 is a real value (SimGrid's example clusters set loopback_lat="0"): the chain's intra-host
    // hops then cost no latency.
    if (loop_routes > 0) out["loopback_latency_us"] = tidy(loopback * 1e6);
    // (Below 1 MB/s the readers take it for a unit mistake: left out, the chain then moves those
    // hops' messages in no time.)
    if (loop_routes > 0 && std::isfinite(loop_bw) && loop_bw >= 1e6) out["loopback_GBps"] = tidy(loop_bw / 1e9);
    out["loopback_routes"] = loop_routes;  // for the parent's warning; not in the table
    write_all(fd, "J" + out.dump());
  } catch (const std::exception& e) {
    write_all(fd, "E " + one_line(e.what()) + "\n");
    code = 2;
  }
  ::close(fd);
  ::_exit(code);
}

// What SimGrid said before dying: the text of its last CRITICAL log line (xbt_assert's message).
std::string critical_message(int err_fd) {
  std::string text;
  char buf[4096];
  if (::lseek(err_fd, 0, SEEK_SET) == 0)
    for (ssize_t n; (n = ::read(err_fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  std::string found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find("/CRITICAL] "); at != std::string::npos)
      found = line.substr(at + std::strlen("/CRITICAL] "));
  return one_line(found);
}

// Runs route_rings in a child process; returns {rings, loopback_latency_us (if any),
// loopback_routes (hosts with a loopback route; not part of the table)}, or throws Error with one
// line.
nlohmann::ordered_json rings_from_child(const Args& a, const std::vector<std::string>& names) {
  std::FILE* err = std::tmpfile();
  if (err == nullptr) throw Error(std::string("cannot create a temporary file: ") + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> err_guard(err, &std::fclose);
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(::fileno(err), STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
    route_rings(a, names, fds[1]);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  // The messages: the last "R i j" names the pair being routed; "E" an error; "J" the rings.
  std::string phase = "starting SimGrid";
  std::size_t pos = 0;
  while (pos < msg.size()) {
    if (msg[pos] == 'J') return nlohmann::ordered_json::parse(msg.substr(pos + 1));
    const std::size_t eol = msg.find('\n', pos);
    const std::string line = msg.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? msg.size() : eol + 1;
    if (line.rfind("E ", 0) == 0) throw Error(line.substr(2));
    if (line == "L") phase = "loading --platform " + a.platform;
    std::size_t i = 0, j = 0;
    if (std::sscanf(line.c_str(), "R %zu %zu", &i, &j) == 2 && i < names.size() && j < names.size())
      phase = "routing " + names[i] + " -> " + names[j] + " on " + a.platform +
              " (no route between them?)";
  }
  std::string how = WIFSIGNALED(status) ? std::string("crashed (") + strsignal(WTERMSIG(status)) + ")"
                                        : "exited with status " + std::to_string(WEXITSTATUS(status));
  const std::string said = critical_message(::fileno(err));
  throw Error("SimGrid " + how + " while " + phase + (said.empty() ? "" : ": " + said));
}

nlohmann::ordered_json ring_routes(const Args& a) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(a.platform, ec))
    throw Error("--platform " + a.platform + ": no such file");
  if (!std::ifstream(a.platform)) throw Error("--platform " + a.platform + ": cannot read it");
  const std::vector<std::string> names = read_hostfile(a.hostfile);
  if (names.size() < 2)
    throw Error("--hostfile " + a.hostfile + ": " + std::to_string(names.size()) +
                " host name(s) in it; a ring needs at least 2");
  const std::string real = std::filesystem::canonical(a.platform).string();
  const std::string sha = shardcal::formats::sha256_file(a.platform);
  nlohmann::ordered_json routed = rings_from_child(a, names);

  nlohmann::ordered_json doc;
  doc["format"] = "shardcal-ring-routes/1";
  doc["source"] = "SimGrid " + simgrid_version() + " Host::route_to on " + real + " (sha256 " + sha + ")";
  doc["hosts_order"] = names;
  doc["rings"] = std::move(routed["rings"]);
  // Not an error (one rank per host needs no loopback), but with several ranks per host their
  // steps then run over a link this table does not describe, and the transport drops the eager
  // chain (it needs the loopback's latency). Hosts whose loopbacks differ: the longest kept.
  const int loop_routes = routed.value("loopback_routes", 0);
  if (routed.contains("loopback_latency_us")) doc["loopback_latency_us"] = routed["loopback_latency_us"];
  if (routed.contains("loopback_GBps")) doc["loopback_GBps"] = routed["loopback_GBps"];
  if (loop_routes == 0) {
    std::cerr << "ring-routes: warning: " << a.platform
              << ": no host has a loopback route (a cluster's loopback_bw/loopback_lat, or a "
                 "<route src=\"H\" dst=\"H\">): two ranks on one host then talk over SimGrid's "
                 "network-model loopback (network/loopback-bw, network/loopback-lat), which the "
                 "table leaves out (no loopback_latency_us); give the hosts a loopback link if "
                 "ranks share a host\n"
              << std::flush;
  }
  if (loop_routes > 0 && std::size_t(loop_routes) < names.size())
    std::cerr << "ring-routes: warning: " << a.platform << ": " << loop_routes << " of "
              << names.size() << " hosts have a loopback route; loopback_latency_us is the "
              << "longest of theirs\n"
              << std::flush;
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ring-routes: for each group of the first H hosts of --hostfile (H = 2 .. all), the routes of\n"
      "its ring in file order on a SimGrid platform (Host::route_to): the longest route's latency\n"
      "(latency_us), each step's route latency (hop_latency_us, host i -> i+1) and the smallest\n"
      "bandwidth share of a ring flow when all its routes flow at once (share_GBps; FATPIPE links\n"
      "give every flow the full bandwidth), how far apart in route latency the flows on that link\n"
      "are (share_skew_us); and the longest loopback route (loopback_latency_us,\n"
      "two ranks on one host) with the slowest one's bandwidth (loopback_GBps). JSON, format\n"
      "shardcal-ring-routes/1. Example: ring-routes --platform platform.xml --hostfile hostfile"};
  Args a;
  app.add_option("--platform", a.platform, "SimGrid platform XML file")->required();
  app.add_option("--hostfile", a.hostfile,
                 "Hosts in ring order, one per line: \"name\" or \"name:slots\" (slots ignored); "
                 "blank lines and # comments skipped, each name once")
      ->required();
  app.add_option("--out", a.out, "Write the JSON here (temporary file + rename); default stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << ("ring-routes: error: " + std::string(e.what()) + " (see --help)\n") << std::flush;
    return 2;
  }
  try {
    const std::string text = ring_routes(a).dump(2) + "\n";
    if (a.out.empty())
      std::cout << text << std::flush;
    else
      shardcal::formats::write_text_atomic(a.out, text);
  } catch (const Error& e) {
    std::cerr << ("ring-routes: error: " + std::string(e.what()) + "\n") << std::flush;
    return 2;
  } catch (const std::exception& e) {
    // Whatever else SimGrid throws while routing: still one line.
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::cerr << ("ring-routes: error: " + what + "\n") << std::flush;
    return 2;
  }
  return 0;
}
