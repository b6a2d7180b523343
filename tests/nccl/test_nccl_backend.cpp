// NCCL backend behaviour that needs no GPU: version reporting and the errors a user gets when
// the job cannot run (wrong world size, no device). This process is an MPI singleton (the test
// runs without mpirun), so the world has one rank.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "nccl/cuda_check.hpp"
#include "nccl/nccl_backend.hpp"
#include "shardcal/error.hpp"

namespace {

TEST(NcclBackend, ReportsLibraryVersionsWithoutADevice) {
  const auto versions = shardcal::nccl::library_versions();
  ASSERT_FALSE(versions.empty());
  EXPECT_EQ(versions[0].first, "NCCL");
  EXPECT_TRUE(std::regex_match(versions[0].second, std::regex(R"(\d+\.\d+\.\d+)")))
      << versions[0].second;
  bool runtime = false, driver = false;
  for (const auto& [name, value] : versions) {
    runtime = runtime || name == "CUDA runtime";
    driver = driver || name == "CUDA driver";
  }
  EXPECT_TRUE(runtime);
  EXPECT_TRUE(driver);
}

TEST(NcclBackend, WrongWorldSizeIsAClearError) {
  try {
    shardcal::nccl::run(5, {}, [](shardcal::Communicator&) { FAIL() << "body must not run"; });
    FAIL() << "expected an error";
  } catch (const shardcal::PeerFailure& e) {
    FAIL() << "a usage error must not look like a peer failure: " << e.what();
  } catch (const shardcal::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("asked for 5 ranks but the launcher started 1"), std::string::npos) << msg;
  }
}

TEST(NcclBackend, NoDeviceIsAClearError) {
  if (shardcal::nccl::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    shardcal::nccl::run(0, {}, [](shardcal::Communicator&) { FAIL() << "body must not run"; });
    FAIL() << "expected an error";
  } catch (const shardcal::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no CUDA device visible to rank 0"), std::string::npos) << msg;
  }
}

TEST(NcclBackend, SingleRankWorldRunsTheBody) {
  if (shardcal::nccl::cuda_device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  bool ran = false;
  shardcal::nccl::run(0, {}, [&](shardcal::Communicator& world) {
    ran = true;
    EXPECT_EQ(world.backend(), "nccl");
    EXPECT_EQ(world.size(), 1);
    EXPECT_EQ(world.memory().kind(), shardcal::MemoryKind::Cuda);
    world.barrier();
    auto sub = world.split(0, 0);
    EXPECT_EQ(sub->size(), 1);
    sub->barrier();
  });
  EXPECT_TRUE(ran);
}

}  // namespace
