#include "shardcal/box_copy.hpp"

#include <string>

#include "shardcal/error.hpp"

namespace shardcal::detail {

void throw_box_fault(BoxFault fault, std::size_t dim) {
  switch (fault) {
    case BoxFault::InconsistentRanks: throw Error("internal: copy_box with inconsistent ranks");
    case BoxFault::ElementSizeZero: throw Error("internal: copy_box with element size 0");
    case BoxFault::OutOfBounds: break;
  }
  throw Error("internal: copy_box out of bounds on dim " + std::to_string(dim));
}

}  // namespace shardcal::detail
