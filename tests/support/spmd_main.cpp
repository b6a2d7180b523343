// main() of the conformance suite. Under mpi/nccl every process runs the same tests in the same
// order (collectives must match); only rank 0 prints gtest's progress.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
