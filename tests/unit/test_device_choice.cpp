// choose_local_device: the NCCL backend's CUDA device per rank (one GPU per local rank under Slurm), without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "shardcal/topology.hpp"

namespace shardcal {
namespace {

TEST(ChooseLocalDevice, EachTaskSeesOneDeviceUsesDeviceZero) {
  // srun --gpus-per-task=1 (CUDA_VISIBLE_DEVICES per task): 8 ranks on a node, 1 device each.
  for (int r = 0; r < 8; ++r) {
    std::string why;
    EXPECT_EQ(choose_local_device(r, 8, 1, &why), 0) << "local rank " << r;
    EXPECT_TRUE(why.empty());
  }
}

TEST(ChooseLocalDevice, AllTasksSeeAllDevicesTheLocalRankPicks) {
  for (int r = 0; r < 8; ++r) EXPECT_EQ(choose_local_device(r, 8, 8, nullptr), r);
  // Fewer ranks than devices: the first ones are used.
  EXPECT_EQ(choose_local_device(1, 2, 8, nullptr), 1);
  EXPECT_EQ(choose_local_device(0, 1, 8, nullptr), 0);
}

TEST(ChooseLocalDevice, TooFewDevicesIsAnErrorSayingHowToFixIt) {
  std::string why;
  EXPECT_EQ(choose_local_device(5, 8, 4, &why), -1);
  EXPECT_NE(why.find("8 ranks on this node see 4 CUDA devices"), std::string::npos) << why;
  EXPECT_NE(why.find("--gpus-per-task=1"), std::string::npos) << why;
  // Even the ranks that would fit fail: a half-started node would hang NCCL init.
  why.clear();
  EXPECT_EQ(choose_local_device(0, 8, 4, &why), -1);
  EXPECT_FALSE(why.empty());
}

TEST(ChooseLocalDevice, NoDeviceOrBadLocalRankIsAnError) {
  std::string why;
  EXPECT_EQ(choose_local_device(0, 1, 0, &why), -1);
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(choose_local_device(3, 2, 2, &why), -1);
  EXPECT_NE(why.find("out of range"), std::string::npos) << why;
}

}  // namespace
}  // namespace shardcal

namespace shardcal {
namespace {

TEST(SharedDeviceError, DistinctDevicesAreFineAndSharedOnesAreNamed) {
  EXPECT_EQ(shared_device_error({"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0"}), "");
  EXPECT_EQ(shared_device_error({}), "");
  EXPECT_EQ(shared_device_error({"", ""}), "");  // unknown ids are not compared
  // Two tasks given CUDA_VISIBLE_DEVICES=0 each: both pick their device 0, the same GPU.
  const std::string e = shared_device_error({"0000:18:00.0", "0000:2a:00.0", "0000:18:00.0"});
  EXPECT_NE(e.find("node-local ranks 0,2 would share the CUDA device at PCI 0000:18:00.0"),
            std::string::npos) << e;
  EXPECT_NE(e.find("--gpus-per-task=1"), std::string::npos) << e;
}

}  // namespace
}  // namespace shardcal
