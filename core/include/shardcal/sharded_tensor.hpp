#pragma once
// A sharded tensor = the complete spec (known on every rank, also ranks whose shard is empty)
// + this rank's local block, contiguous row-major, in the communicator's memory space.
#include <cstddef>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/memory.hpp"
#include "shardcal/mesh_comm.hpp"

namespace shardcal {

class ShardedTensor {
 public:
  ShardedTensor(TensorSpec spec, int rank, Buffer local);

  // Wrap this rank's block; throws if its byte size does not match the spec.
  static ShardedTensor from_local(MeshCommunicator& mc, TensorSpec spec, Buffer local);
  static ShardedTensor zeros(MeshCommunicator& mc, TensorSpec spec);

  // The root holds the spec and the global tensor (host memory, row-major); every other rank
  // passes only the root id: the spec and its block arrive together. Partial mesh dims take the
  // reference form: coordinate 0 holds the values, other coordinates hold 0 for sum and the
  // values themselves for avg/max/min, so reducing gives the global tensor back exactly.
  static ShardedTensor scatter_from_root(MeshCommunicator& mc, int root, const TensorSpec* spec,
                                         const void* global_host);
  // Build from a global host tensor that every rank holds (test and demo helper, no comms).
  static ShardedTensor from_global(MeshCommunicator& mc, const TensorSpec& spec,
                                   const void* global_host);

  // Global tensor (host memory, row-major, Partial dims reduced) on `root`; empty elsewhere.
  std::vector<std::byte> gather_to_root(MeshCommunicator& mc, int root) const;
  std::vector<std::byte> gather_to_all(MeshCommunicator& mc) const;
  std::vector<std::byte> local_to_host() const;

  const TensorSpec& spec() const { return spec_; }
  int rank() const { return rank_; }
  Box local_box() const { return spec_.local_box(rank_); }
  const Buffer& local() const { return local_; }
  Buffer& local() { return local_; }

 private:
  TensorSpec spec_;
  int rank_;
  Buffer local_;
};

// Host-side helpers on global tensors (reference data and verification).
// Fill with value(i) = (row-major linear index i) mod 251: exact in every dtype.
std::vector<std::byte> make_reference_tensor(const TensorMeta& meta);
// Copy `box` (global coordinates) out of a global row-major host tensor.
std::vector<std::byte> slice_global(const TensorMeta& meta, const void* global, const Box& box);
// The block `rank` holds in the reference form of `spec` (see scatter_from_root).
std::vector<std::byte> expected_local(const TensorSpec& spec, const void* global, int rank);
// The same block of make_reference_tensor(spec.meta()), computed from the formula: no global
// tensor needed, so every rank of a large simulated world can verify its block in O(block).
std::vector<std::byte> expected_reference_local(const TensorSpec& spec, int rank);

}  // namespace shardcal
