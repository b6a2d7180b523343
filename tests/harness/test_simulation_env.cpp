// The simulation description (SHARDCAL_SIMULATION): read only by a binary built for SMPI, so a
// leftover variable neither marks real results as simulated nor breaks a real sweep.
#include <gtest/gtest.h>

#include <string>

#include "shardcal/error.hpp"
#include "sweep/simulation_env.hpp"

using namespace shardbench::sweep;

namespace {
auto env_with(const char* value) {
  return [value](const char* name) { return std::string(name) == "SHARDCAL_SIMULATION" ? value : nullptr; };
}
}  // namespace

TEST(SimulationEnv, NativeBuildIgnoresTheVariable) {
  EXPECT_TRUE(simulation_description(env_with("{\"np\": 16}"), false).is_null());
  EXPECT_TRUE(simulation_description(env_with("not json"), false).is_null());
  EXPECT_FALSE(built_for_simulation());  // these tests are a native build
  EXPECT_TRUE(simulation_description().is_null());
}

TEST(SimulationEnv, SimulatedBuildReadsAnObject) {
  EXPECT_EQ(simulation_description(env_with("{\"np\": 16}"), true)["np"], 16);
  EXPECT_TRUE(simulation_description(env_with(nullptr), true).is_null());
  EXPECT_TRUE(simulation_description(env_with(""), true).is_null());
  EXPECT_THROW(simulation_description(env_with("[1]"), true), shardcal::Error);
  EXPECT_THROW(simulation_description(env_with("{\"np\":"), true), shardcal::Error);
}
