#pragma once
#include <string>

namespace shardcal::formats {

// Now as "YYYY-MM-DDTHH:MM:SSZ" (the date fields of results contexts and profiles).
std::string utc_now_iso8601();

}  // namespace shardcal::formats
