#include "shardcal/mesh_comm.hpp"

#include "shardcal/error.hpp"

namespace shardcal {

MeshCommunicator::MeshCommunicator(DeviceMesh mesh, Communicator& world)
    : mesh_(std::move(mesh)), world_(&world) {
  if (mesh_.size() != world.size())
    throw Error("mesh " + mesh_.to_string() + " has " + std::to_string(mesh_.size()) +
                " ranks but the " + world.backend() + " world has " + std::to_string(world.size()) +
                ": choose a mesh whose extents multiply to the number of ranks");
  const int r = world.rank();
  for (int d = 0; d < mesh_.ndim(); ++d)
    dims_.push_back(world.split(mesh_.group_color(r, {d}), mesh_.group_position(r, {d})));
}

}  // namespace shardcal
