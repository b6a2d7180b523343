// The small-message floor check (formats/floor_check.hpp) that `shardbench sweep` records and
// `shardbench calibrate` repeats (issue 44, trap 11).
#include <gtest/gtest.h>

#include "shardcal/formats/floor_check.hpp"

namespace {

using shardcal::formats::FloorSample;
using shardcal::formats::implausible_floors;

std::vector<FloorSample> series(const std::string& name, int hosts, double floor_s) {
  std::vector<FloorSample> out;
  for (double b = 8; b <= 1 << 20; b *= 8) out.push_back({name, hosts, b, floor_s + b * 1e-10});
  return out;
}

TEST(FloorCheck, WarnsOnlyAboveTheLinksLimit) {
  std::vector<FloorSample> s = series("all_gather mesh=4 dim=0", 1, 8e-3);   // 8 ms in a host
  for (auto& x : series("all_reduce mesh=4 dim=0", 1, 20e-6)) s.push_back(x);  // 20 us: fine
  for (auto& x : series("all_gather mesh=2x2 dim=0", 2, 2e-3)) s.push_back(x); // 2 ms across: fine
  for (auto& x : series("all_reduce mesh=2x2 dim=0", 2, 6e-3)) s.push_back(x); // 6 ms across
  const auto w = implausible_floors(s);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].series, "all_gather mesh=4 dim=0");
  EXPECT_EQ(w[0].hosts_spanned, 1);
  EXPECT_DOUBLE_EQ(w[0].limit_s, 1e-3);
  EXPECT_EQ(w[0].points, 5);  // 8 B .. 32 KiB (x8 steps); 256 KiB is not a small message
  EXPECT_EQ(w[1].series, "all_reduce mesh=2x2 dim=0");
  EXPECT_DOUBLE_EQ(w[1].limit_s, 5e-3);
  for (const auto& x : w) {
    EXPECT_NE(x.message.find("oversubscribed cores"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("busy-polling"), std::string::npos) << x.message;
    EXPECT_EQ(x.to_json()["type"], "warning");
    EXPECT_EQ(x.to_json()["kind"], "implausible_small_message_floor");
  }
}

TEST(FloorCheck, OneFastSmallMessageMeansNoFloor) {
  auto s = series("all_gather mesh=4 dim=0", 1, 8e-3);
  s.push_back({"all_gather mesh=4 dim=0", 1, 4096, 50e-6});  // the min is the floor
  EXPECT_TRUE(implausible_floors(s).empty());
  // One small point is no floor; large messages may take milliseconds.
  EXPECT_TRUE(implausible_floors({{"x", 1, 8, 9e-3}, {"x", 1, 1 << 20, 9e-3}}).empty());
}

}  // namespace
