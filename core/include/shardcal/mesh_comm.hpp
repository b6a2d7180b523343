#pragma once
// A device mesh bound to a world communicator, with one sub-communicator per mesh dim (the
// ranks that differ only in that coordinate). Construction is collective.
#include <memory>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/mesh.hpp"

namespace shardcal {

class MeshCommunicator {
 public:
  // Throws Error (on every rank, no communication needed) if mesh.size() != world.size().
  MeshCommunicator(DeviceMesh mesh, Communicator& world);

  const DeviceMesh& mesh() const { return mesh_; }
  Communicator& world() { return *world_; }
  Communicator& dim(int mesh_dim) { return *dims_.at(std::size_t(mesh_dim)); }
  int rank() const { return world_->rank(); }
  std::vector<int> coord() const { return mesh_.coord(world_->rank()); }
  MemorySpace& memory() { return world_->memory(); }

 private:
  DeviceMesh mesh_;
  Communicator* world_;
  std::vector<std::unique_ptr<Communicator>> dims_;
};

}  // namespace shardcal
