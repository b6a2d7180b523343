#include "shardcal/comm_util.hpp"

#include <cstring>

namespace shardcal {

namespace {
struct Layout {
  std::vector<std::size_t> counts, displs;
  std::size_t total = 0;
};
Layout layout_of(Communicator& comm, const std::string& mine) {
  const std::vector<std::uint64_t> lens = comm.all_gather_u64(mine.size());
  Layout l;
  for (std::uint64_t n : lens) {
    l.counts.push_back(std::size_t(n));
    l.displs.push_back(l.total);
    l.total += std::size_t(n);
  }
  return l;
}
std::vector<std::string> split(const Layout& l, const std::vector<char>& bytes) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < l.counts.size(); ++r)
    out.emplace_back(bytes.data() + l.displs[r], l.counts[r]);
  return out;
}
}  // namespace

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine, int root) {
  const Layout l = layout_of(comm, mine);
  MemorySpace& mem = comm.memory();
  Buffer send(mem, mine.size()), recv(mem, comm.rank() == root ? l.total : 0);
  mem.copy_from_host(send.data(), mine.data(), mine.size());
  comm.gatherv(send.data(), mine.size(), recv.data(), l.counts, l.displs, DType::U8, root);
  if (comm.rank() != root) return {};
  std::vector<char> bytes(l.total);
  mem.copy_to_host(bytes.data(), recv.data(), l.total);
  return split(l, bytes);
}

std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine) {
  const Layout l = layout_of(comm, mine);
  MemorySpace& mem = comm.memory();
  Buffer send(mem, mine.size()), recv(mem, l.total);
  mem.copy_from_host(send.data(), mine.data(), mine.size());
  comm.all_gatherv(send.data(), mine.size(), recv.data(), l.counts, l.displs, DType::U8);
  std::vector<char> bytes(l.total);
  mem.copy_to_host(bytes.data(), recv.data(), l.total);
  return split(l, bytes);
}

}  // namespace shardcal
