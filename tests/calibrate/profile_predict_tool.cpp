// Test helper for the Python parity test (parity_test.py): reads a profile (argv[1]) and one
// query per stdin line
//   COLLECTIVE GROUP_SIZE HOSTS RANKS_PER_HOST CONCURRENT BYTES DTYPE|- ELEM_SIZE COUNTS|-
// (COUNTS comma separated) and prints one line per query:
//   ok TIME_US(%.17g) MODEL_INDEX SEGMENT EXTRAPOLATED(0|1)   or   error MESSAGE
// `profile_predict_tool --table` prints the collective table instead, one line per entry:
//   NAME HAS_V_FORM(0|1) then busbw_factor(n) (%.17g) and ring_steps(n) for n = 1..16
// (the Python module's copy of the table is checked against it).
// `profile_predict_tool --link-classes` reads one `MESH RANKS_PER_HOST` per stdin line (mesh as
// "2x3") and prints, per mesh dim, `GROUP_SIZE HOSTS RANKS_PER_HOST CONCURRENT` separated by
// " | ": the link class `shardbench plan` prices that dim with (mesh_dim_link_class).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/mesh.hpp"

int main(int argc, char** argv) {
  using namespace shardcal;
  if (argc == 2 && std::string(argv[1]) == "--table") {
    for (const CollectiveInfo& info : kCollectives) {
      std::cout << info.name << " " << (info.has_v_form ? 1 : 0);
      for (int n = 1; n <= 16; ++n) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " %.17g %d", info.busbw_factor(n), info.ring_steps(n));
        std::cout << buf;
      }
      std::cout << "\n";
    }
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "--link-classes") {
    std::string mesh_text;
    int rph = 0;
    while (std::cin >> mesh_text >> rph) {
      const DeviceMesh mesh = DeviceMesh::parse(mesh_text);
      for (int d = 0; d < mesh.ndim(); ++d) {
        const calib::LinkClass lc = calib::mesh_dim_link_class(mesh, d, rph);
        std::cout << (d > 0 ? " | " : "") << lc.group_size << " " << lc.hosts << " "
                  << lc.ranks_per_host << " " << lc.concurrent_groups;
      }
      std::cout << "\n";
    }
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: profile_predict_tool PROFILE < queries\n";
    return 2;
  }
  calib::Profile p;
  try {
    p = calib::read_profile(argv[1]);
  } catch (const Error& e) {
    std::cout << "error " << e.what() << "\n";
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string coll, dtype, counts_text;
    calib::LinkClass lc;
    double bytes = 0;
    int elem = 1;
    in >> coll >> lc.group_size >> lc.hosts >> lc.ranks_per_host >> lc.concurrent_groups >> bytes >> dtype >> elem >>
        counts_text;
    if (!in) {
      std::cout << "error unparsable query\n";
      continue;
    }
    std::vector<std::int64_t> counts;
    if (counts_text != "-") {
      std::istringstream cs(counts_text);
      std::string item;
      while (std::getline(cs, item, ',')) counts.push_back(std::stoll(item));
    }
    try {
      auto c = find_collective(coll);
      if (!c) throw Error("unknown collective");
      std::optional<DType> dt;
      if (dtype != "-") dt = parse_dtype(dtype);
      const calib::Prediction r = calib::predict(p, *c, lc, bytes, counts, elem, dt);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g", r.time_us, r.lo_us, r.hi_us);
      std::cout << "ok " << buf << " " << (r.model - p.models.data()) << " " << r.segment << " "
                << (r.extrapolated ? 1 : 0) << "\n";
    } catch (const Error& e) {
      std::cout << "error " << e.what() << "\n";
    }
  }
  return 0;
}
