#include "sweep/step_record.hpp"

#include <string>

namespace shardbench::sweep {

nlohmann::json step_traffic_json(const shardcal::StepTraffic& t) {
  nlohmann::json j;
  if (t.collective) {
    const auto& info = shardcal::collective_info(*t.collective);
    // The call the executor makes, chosen per group: the plain collective in every group whose
    // counts are even, else the v-form; "mixed" when the groups differ (plain_groups says how
    // many make the plain call).
    j["call"] = t.plain_groups == t.groups ? std::string(info.name)
                : t.plain_groups == 0      ? std::string(info.name) + "v"
                                           : std::string("mixed");
    j["bytes_convention"] = std::string(info.bytes_convention);
  } else {
    j["call"] = "none";
    j["bytes_convention"] = "nothing moves (local step)";
  }
  j["groups"] = t.groups;
  j["group_size"] = t.group_size;
  j["counts"] = t.counts;
  j["heaviest_group"] = t.heaviest_group;
  j["groups_identical"] = t.groups_identical;
  j["uniform"] = t.uniform;
  j["plain_groups"] = t.collective ? t.plain_groups : 0;
  j["heaviest_uniform"] = t.heaviest_uniform;
  j["elem_size"] = t.elem_size;
  j["bytes"] = t.bytes;
  j["max_send_bytes"] = t.max_send_bytes;
  j["max_recv_bytes"] = t.max_recv_bytes;
  j["max_copy_bytes"] = t.max_copy_bytes;
  j["max_out_bytes"] = t.max_out_bytes;
  return j;
}

}  // namespace shardbench::sweep
