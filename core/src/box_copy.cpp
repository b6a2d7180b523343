#include "shardcal/box_copy.hpp"

#include <string>

#include "shardcal/error.hpp"

namespace shardcal {

bool check_box(const BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  if (c.src_shape.size() != nd || c.dst_shape.size() != nd || c.src_offset.size() != nd ||
      c.dst_offset.size() != nd)
    throw Error("internal: copy_box with inconsistent ranks");
  if (c.elem_size == 0) throw Error("internal: copy_box with element size 0");
  for (std::size_t d = 0; d < nd; ++d) {
    if (c.extent[d] == 0) return false;
    if (c.extent[d] < 0 || c.src_offset[d] < 0 || c.src_offset[d] + c.extent[d] > c.src_shape[d] ||
        c.dst_offset[d] < 0 || c.dst_offset[d] + c.extent[d] > c.dst_shape[d])
      throw Error("internal: copy_box out of bounds on dim " + std::to_string(d));
  }
  return true;
}

}  // namespace shardcal
