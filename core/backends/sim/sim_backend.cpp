// Rank simulator. Design:
//  - One mutex per run guards the shared state; each world rank has its own condition variable
//    (a thread waits in one place at a time), so completing a group's round wakes only its
//    members, and a failure can wake every rank without a registry of groups.
//  - A collective is one generation-counted rendezvous on the communicator's Group. Before
//    arriving, each rank copies its arguments and its contribution (send data, counts) into its
//    Slot, which the group owns; the last rank to arrive validates all slots once, under the
//    lock, so every rank throws the same Error or none does. Then each rank, without the lock,
//    reads its peers' slots and writes only its own output.
//  - Because peers read group-owned copies, never user buffers, a rank may return (and free or
//    overwrite its buffers, in place included) as soon as it has read; nobody waits for a
//    second "release" round. Slots are double-buffered by round parity: while slow peers still
//    read round k, fast ones already fill round k+1; round k+2 cannot start before every peer
//    arrived at round k+1, i.e. finished reading round k.
//  - Any rank's exception, a timeout, or a wait on a rank that already returned "poisons" the
//    run: every current and future wait throws PeerFailure with the cause.
#include "sim/sim_backend.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/error.hpp"

namespace shardcal::sim {
namespace {

using Clock = std::chrono::steady_clock;
using Lock = std::unique_lock<std::mutex>;

enum class Op : std::uint8_t {
  Barrier, Broadcast, AllReduce, AllGather, AllGatherv, ReduceScatter, ReduceScatterv,
  AllToAll, AllToAllv, Scatter, Scatterv, Gather, Gatherv, Split, AllGatherU64,
  BroadcastString, Send, Recv
};

const char* op_name(Op op) {
  switch (op) {
    case Op::Barrier: return "barrier";
    case Op::Broadcast: return "broadcast";
    case Op::AllReduce: return "all_reduce";
    case Op::AllGather: return "all_gather";
    case Op::AllGatherv: return "all_gatherv";
    case Op::ReduceScatter: return "reduce_scatter";
    case Op::ReduceScatterv: return "reduce_scatterv";
    case Op::AllToAll: return "all_to_all";
    case Op::AllToAllv: return "all_to_allv";
    case Op::Scatter: return "scatter";
    case Op::Scatterv: return "scatterv";
    case Op::Gather: return "gather";
    case Op::Gatherv: return "gatherv";
    case Op::Split: return "split";
    case Op::AllGatherU64: return "all_gather_u64";
    case Op::BroadcastString: return "broadcast_string";
    case Op::Send: return "send";
    case Op::Recv: return "recv";
  }
  return "?";
}

// The operation Communicator names when it rejects a call (reject() gets the name only).
Op op_named(std::string_view name) {
  for (int i = 0; i <= int(Op::Recv); ++i)
    if (name == op_name(Op(i))) return Op(i);
  throw Error("internal: sim has no operation named " + std::string(name));
}

// The collective-table entry an operation issues and whether it is the v-form; none for
// barrier, split, the control plane and point to point. The table's traits (rooted, reduces)
// are the ones validate() checks across ranks.
struct TableOp {
  Collective c;
  bool v;
};
std::optional<TableOp> table_op(Op op) {
  switch (op) {
    case Op::Broadcast: return TableOp{Collective::Broadcast, false};
    case Op::AllReduce: return TableOp{Collective::AllReduce, false};
    case Op::AllGather: return TableOp{Collective::AllGather, false};
    case Op::AllGatherv: return TableOp{Collective::AllGather, true};
    case Op::ReduceScatter: return TableOp{Collective::ReduceScatter, false};
    case Op::ReduceScatterv: return TableOp{Collective::ReduceScatter, true};
    case Op::AllToAll: return TableOp{Collective::AllToAll, false};
    case Op::AllToAllv: return TableOp{Collective::AllToAll, true};
    case Op::Scatter: return TableOp{Collective::Scatter, false};
    case Op::Scatterv: return TableOp{Collective::Scatter, true};
    case Op::Gather: return TableOp{Collective::Gather, false};
    case Op::Gatherv: return TableOp{Collective::Gather, true};
    default: return std::nullopt;
  }
}

// Operations that move typed elements (their dtype must agree across ranks).
bool has_dtype(Op op) { return table_op(op).has_value(); }
bool has_root(Op op) {
  const auto t = table_op(op);
  return t ? collective_info(t->c).has_root : op == Op::BroadcastString;
}
bool has_reduce_op(Op op) {
  const auto t = table_op(op);
  return t && collective_info(t->c).reduces;
}
// Operations whose single `count` must be equal on every rank: the plain forms.
bool has_uniform_count(Op op) {
  const auto t = table_op(op);
  return t && !t->v;
}

// One rank's arguments and contribution to one round, owned by the group so that peers can
// read it after the rank has returned.
struct Slot {
  Op op = Op::Barrier;
  DType t = DType::U8;
  ReduceOp rop = ReduceOp::Sum;
  int root = 0;
  std::size_t count = 0;       // count, or this rank's send_count in v-forms
  std::size_t recv_count = 0;  // scatterv
  std::vector<std::size_t> counts, displs;            // v-forms (all_to_allv: send side)
  std::vector<std::size_t> recv_counts, recv_displs;  // all_to_allv receive side
  std::vector<std::byte> data;    // this rank's send data (packed per destination for v-forms)
  std::vector<std::size_t> offs;  // element offset in `data` of the block for each rank
  int color = 0, key = 0;
  std::uint64_t u64 = 0;
  std::string text;
  std::string rejected;  // this rank's arguments failed Communicator's checks: the message
};

struct Group;

struct RankState {
  std::condition_variable cv;  // only this rank's thread waits on it
  bool exited = false;         // its body returned or threw
  // What the rank is inside of, to explain timeouts; `in` (the group's description) is null
  // outside communicator calls. Shared so it never dangles if the group goes away.
  Op doing = Op::Barrier;
  std::shared_ptr<const std::string> in;
};

struct Run {
  Run(int world, double timeout_seconds)
      : ranks(std::size_t(world)),
        timeout_s(timeout_seconds),
        // Clamp so the deadline arithmetic cannot overflow for "infinite" timeouts.
        timeout(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(std::min(timeout_seconds, 1e7)))) {}

  // Requires mu. The first cause wins; every rank is woken to notice it.
  void poison(int world_rank, const std::string& why) {
    if (failed) return;
    failed = true;
    cause = why;
    origin = world_rank;
    for (auto& r : ranks) r.cv.notify_one();
  }

  std::mutex mu;
  std::vector<RankState> ranks;
  double timeout_s;
  Clock::duration timeout;
  bool failed = false;
  std::string cause;
  int origin = -1;              // world rank whose failure poisoned the run
  std::vector<int> fail_order;  // world ranks in the order their bodies threw
};

// A point-to-point message. Lives on the sender's stack; the sender waits until Done.
struct Msg {
  enum class State : std::uint8_t { Posted, Taken, Done };
  const void* buf = nullptr;
  std::size_t count = 0;
  DType t = DType::U8;
  State state = State::Posted;
  std::string error;  // set by the receiver on a count/dtype mismatch
};

// Shared state of one communicator (world or split group), owned jointly by its members.
struct Group {
  Group(Run& r, std::vector<int> world_ranks, std::string description)
      : run(r),
        members(std::move(world_ranks)),
        desc(std::make_shared<const std::string>(std::move(description))),
        slots{std::vector<Slot>(members.size()), std::vector<Slot>(members.size())},
        here(members.size(), 0),
        split_out(members.size()) {}

  int size() const { return int(members.size()); }

  Run& run;
  const std::vector<int> members;  // world rank of each group rank
  const std::shared_ptr<const std::string> desc;
  // Rendezvous state: `gen` advances each time all members have arrived; round `gen` uses
  // slots[gen % 2].
  std::uint64_t gen = 0;
  int arrived = 0;
  std::vector<Slot> slots[2];
  std::vector<char> here;
  std::string error;  // validation verdict of the last completed round
  std::vector<std::pair<std::shared_ptr<Group>, int>> split_out;  // (group, new rank) per rank
  // Pending sends keyed by (source, dest, tag) in group ranks; FIFO per key.
  std::map<std::tuple<int, int, int>, std::deque<Msg*>> mail;
};

std::string list_ranks(const std::vector<int>& v, std::size_t max_shown = 8) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max_shown; ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > max_shown) s += ",...";
  return s;
}

// Validation of one round: "" when consistent, else the message every rank throws.
// Runs once, under the lock, on the last rank to arrive.
std::string validate(const Group& g, const std::vector<Slot>& s) {
  const int n = g.size();
  const Slot& s0 = s[0];
  const std::string& desc = *g.desc;
  const std::string where = std::string(op_name(s0.op)) + " on " + desc + ": ";
  auto rk = [](int r) { return "rank " + std::to_string(r); };
  for (int r = 1; r < n; ++r)
    if (s[r].op != s0.op)
      return "collective mismatch on " + desc + ": rank 0 called " + op_name(s0.op) +
             " but rank " + std::to_string(r) + " called " + op_name(s[r].op) +
             "; every rank of a communicator must call the same collectives in the same order";
  // A rank whose arguments Communicator rejected: every rank reports that rank's problem.
  for (int r = 0; r < n; ++r)
    if (!s[r].rejected.empty()) return s[r].rejected;
  for (int r = 1; r < n; ++r) {
    if (has_dtype(s0.op) && s[r].t != s0.t)
      return where + "dtype differs between ranks (rank 0: " + std::string(dtype_name(s0.t)) +
             ", " + rk(r) + ": " + std::string(dtype_name(s[r].t)) + ")";
    if (has_root(s0.op) && s[r].root != s0.root)
      return where + "root differs between ranks (rank 0: " + std::to_string(s0.root) + ", " +
             rk(r) + ": " + std::to_string(s[r].root) + ")";
    if (has_reduce_op(s0.op) && s[r].rop != s0.rop)
      return where + "reduce op differs between ranks (rank 0: " +
             std::string(reduce_op_name(s0.rop)) + ", " + rk(r) + ": " +
             std::string(reduce_op_name(s[r].rop)) + ")";
    if (has_uniform_count(s0.op) && s[r].count != s0.count)
      return where + "count differs between ranks (rank 0: " + std::to_string(s0.count) +
             ", " + rk(r) + ": " + std::to_string(s[r].count) + ")";
  }
  // Roots, peers, array lengths and colors were checked by Communicator on each rank (a rank
  // that failed them arrives with `rejected`); what is left needs every rank's arguments.
  switch (s0.op) {
    case Op::AllGatherv:
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          if (s[r].counts[j] != s[j].count)
            return where + rk(r) + " expects " + std::to_string(s[r].counts[j]) +
                   " elements from rank " + std::to_string(j) + " but rank " +
                   std::to_string(j) + " sends " + std::to_string(s[j].count);
      break;
    case Op::ReduceScatterv:
      for (int r = 0; r < n; ++r)
        if (!std::equal(s[r].counts.begin(), s[r].counts.end(), s0.counts.begin()))
          return where + "counts differ between rank 0 and " + rk(r);
      break;
    case Op::AllToAllv:
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          if (s[r].counts[j] != s[j].recv_counts[r])
            return where + rk(r) + " sends " + std::to_string(s[r].counts[j]) +
                   " elements to rank " + std::to_string(j) + " but rank " + std::to_string(j) +
                   " expects " + std::to_string(s[j].recv_counts[r]) + " from it";
      break;
    case Op::Scatterv: {
      const Slot& root = s[s0.root];
      for (int j = 0; j < n; ++j)
        if (root.counts[j] != s[j].recv_count)
          return where + "root " + std::to_string(s0.root) + " sends " +
                 std::to_string(root.counts[j]) + " elements to rank " + std::to_string(j) +
                 " but it expects " + std::to_string(s[j].recv_count);
      break;
    }
    case Op::Gatherv: {
      const Slot& root = s[s0.root];
      for (int j = 0; j < n; ++j)
        if (root.counts[j] != s[j].count)
          return where + "root " + std::to_string(s0.root) + " expects " +
                 std::to_string(root.counts[j]) + " elements from rank " + std::to_string(j) +
                 " but it sends " + std::to_string(s[j].count);
      break;
    }
    default:
      break;
  }
  return {};
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

const std::byte* cbytes(const void* p) { return static_cast<const std::byte*>(p); }

void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n > 0) std::memcpy(dst, src, n);  // n == 0 may come with null pointers
}

// Copies `bytes` from src into a slot's storage (reusing its capacity).
void pack(std::vector<std::byte>& dst, const void* src, std::size_t bytes) {
  dst.resize(bytes);
  copy_bytes(dst.data(), src, bytes);
}

// Packs block j (counts[j] elements at displs[j]) of src for every j, contiguously; offs[j] is
// where block j starts. Tolerates inconsistent lengths: validation reports them afterwards.
void pack_blocks(Slot& s, const void* src, std::size_t es) {
  const std::size_t n = std::min(s.counts.size(), s.displs.size());
  s.offs.resize(n);
  std::size_t total = 0;
  for (std::size_t j = 0; j < n; ++j) total += s.counts[j];
  s.data.resize(total * es);
  std::size_t at = 0;
  for (std::size_t j = 0; j < n; ++j) {
    s.offs[j] = at;
    if (s.counts[j] > 0)
      std::memcpy(s.data.data() + at * es, cbytes(src) + s.displs[j] * es, s.counts[j] * es);
    at += s.counts[j];
  }
}

std::string describe_split(int color, const std::vector<int>& world_ranks) {
  return "sim split group (color " + std::to_string(color) + ", size " +
         std::to_string(world_ranks.size()) + ", world ranks " + list_ranks(world_ranks) + ")";
}

class SimComm final : public Communicator {
 public:
  SimComm(std::shared_ptr<Group> g, int rank) : g_(std::move(g)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }
  std::string backend() const override { return "sim"; }
  std::string describe() const override { return *g_->desc; }
  MemorySpace& memory() override { return host_memory(); }
  // Every rank is a thread of this process: one steady clock.
  ClockScope start_clock_scope() const override { return ClockScope::Global; }

  void barrier() override {
    next_slot(Op::Barrier);
    rendezvous(Op::Barrier);
  }

  void do_broadcast(void* buf, std::size_t count, DType t, int root) override {
    Slot& s = next_data_slot(Op::Broadcast, t, count);
    s.root = root;
    if (rank_ == root) pack(s.data, buf, count * dtype_size(t));
    rendezvous(Op::Broadcast);
    if (rank_ != root) copy_bytes(buf, peer(root).data.data(), count * dtype_size(t));
  }

  void do_all_reduce(const void* send, void* recv, std::size_t count, DType t,
                     ReduceOp op) override {
    Slot& s = next_data_slot(Op::AllReduce, t, count);
    s.rop = op;
    pack(s.data, send, count * dtype_size(t));
    rendezvous(Op::AllReduce);
    reduce_blocks(static_cast<std::byte*>(recv), 0, count, t, op);
  }

  void do_all_gather(const void* send, void* recv, std::size_t count, DType t) override {
    const std::size_t bytes = count * dtype_size(t);
    pack(next_data_slot(Op::AllGather, t, count).data, send, bytes);
    rendezvous(Op::AllGather);
    for (int j = 0; j < size(); ++j)
      if (bytes > 0) copy_bytes(out(recv, std::size_t(j) * bytes), peer(j).data.data(), bytes);
  }

  void do_all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                      Counts displs, DType t) override {
    const std::size_t es = dtype_size(t);
    Slot& s = next_data_slot(Op::AllGatherv, t, send_count);
    s.counts.assign(counts.begin(), counts.end());
    s.displs.assign(displs.begin(), displs.end());
    pack(s.data, send, send_count * es);
    rendezvous(Op::AllGatherv);
    for (int j = 0; j < size(); ++j)
      if (counts[j] > 0)
        copy_bytes(out(recv, displs[j] * es), peer(j).data.data(), counts[j] * es);
  }

  void do_reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                         ReduceOp op) override {
    Slot& s = next_data_slot(Op::ReduceScatter, t, count);
    s.rop = op;
    pack(s.data, send, count * std::size_t(size()) * dtype_size(t));
    rendezvous(Op::ReduceScatter);
    reduce_blocks(static_cast<std::byte*>(recv), std::size_t(rank_) * count, count, t, op);
  }

  void do_reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                          ReduceOp op) override {
    Slot& s = next_data_slot(Op::ReduceScatterv, t, 0);
    s.rop = op;
    s.counts.assign(counts.begin(), counts.end());
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    pack(s.data, send, total * dtype_size(t));
    rendezvous(Op::ReduceScatterv);
    const std::size_t offset =
        std::accumulate(counts.begin(), counts.begin() + rank_, std::size_t{0});
    reduce_blocks(static_cast<std::byte*>(recv), offset, counts[rank_], t, op);
  }

  void do_all_to_all(const void* send, void* recv, std::size_t count, DType t) override {
    const std::size_t bytes = count * dtype_size(t);
    pack(next_data_slot(Op::AllToAll, t, count).data, send, bytes * std::size_t(size()));
    rendezvous(Op::AllToAll);
    for (int j = 0; j < size(); ++j)
      if (bytes > 0)
        copy_bytes(out(recv, std::size_t(j) * bytes),
                   peer(j).data.data() + std::size_t(rank_) * bytes, bytes);
  }

  void do_all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                      Counts recv_counts, Counts recv_displs, DType t) override {
    const std::size_t es = dtype_size(t);
    Slot& s = next_data_slot(Op::AllToAllv, t, 0);
    s.counts.assign(send_counts.begin(), send_counts.end());
    s.displs.assign(send_displs.begin(), send_displs.end());
    s.recv_counts.assign(recv_counts.begin(), recv_counts.end());
    s.recv_displs.assign(recv_displs.begin(), recv_displs.end());
    pack_blocks(s, send, es);
    rendezvous(Op::AllToAllv);
    for (int j = 0; j < size(); ++j) {
      const Slot& p = peer(j);
      if (recv_counts[j] > 0)
        copy_bytes(out(recv, recv_displs[j] * es), p.data.data() + p.offs[rank_] * es,
                   recv_counts[j] * es);
    }
  }

  void do_scatter(const void* send, void* recv, std::size_t count, DType t, int root) override {
    const std::size_t bytes = count * dtype_size(t);
    Slot& s = next_data_slot(Op::Scatter, t, count);
    s.root = root;
    if (rank_ == root) pack(s.data, send, bytes * std::size_t(size()));
    rendezvous(Op::Scatter);
    if (bytes > 0) copy_bytes(recv, peer(root).data.data() + std::size_t(rank_) * bytes, bytes);
  }

  void do_scatterv(const void* send, Counts counts, Counts displs, void* recv,
                   std::size_t recv_count, DType t, int root) override {
    const std::size_t es = dtype_size(t);
    Slot& s = next_data_slot(Op::Scatterv, t, 0);
    s.recv_count = recv_count;
    s.root = root;
    if (rank_ == root) {
      s.counts.assign(counts.begin(), counts.end());
      s.displs.assign(displs.begin(), displs.end());
      pack_blocks(s, send, es);
    }
    rendezvous(Op::Scatterv);
    const Slot& r = peer(root);
    if (recv_count > 0) copy_bytes(recv, r.data.data() + r.offs[rank_] * es, recv_count * es);
  }

  void do_gather(const void* send, void* recv, std::size_t count, DType t, int root) override {
    const std::size_t bytes = count * dtype_size(t);
    Slot& s = next_data_slot(Op::Gather, t, count);
    s.root = root;
    pack(s.data, send, bytes);
    rendezvous(Op::Gather);
    if (rank_ != root || bytes == 0) return;
    for (int j = 0; j < size(); ++j)
      copy_bytes(out(recv, std::size_t(j) * bytes), peer(j).data.data(), bytes);
  }

  void do_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                  Counts displs, DType t, int root) override {
    const std::size_t es = dtype_size(t);
    Slot& s = next_data_slot(Op::Gatherv, t, send_count);
    s.root = root;
    if (rank_ == root) {
      s.counts.assign(counts.begin(), counts.end());
      s.displs.assign(displs.begin(), displs.end());
    }
    pack(s.data, send, send_count * es);
    rendezvous(Op::Gatherv);
    if (rank_ != root) return;
    for (int j = 0; j < size(); ++j)
      if (counts[j] > 0)
        copy_bytes(out(recv, displs[j] * es), peer(j).data.data(), counts[j] * es);
  }

  void do_send(const void* buf, std::size_t count, DType t, int peer, int tag) override;
  void do_recv(void* buf, std::size_t count, DType t, int peer, int tag) override;

  std::unique_ptr<Communicator> do_split(int color, int key) override {
    Slot& s = next_slot(Op::Split);
    s.color = color;
    s.key = key;
    Lock lk = rendezvous(Op::Split);
    // The last arriver built the groups (complete()); take ours so the parent drops its ref.
    auto [group, new_rank] = std::move(g_->split_out[std::size_t(rank_)]);
    g_->split_out[std::size_t(rank_)] = {};
    return std::make_unique<SimComm>(std::move(group), new_rank);
  }

  // A collective whose arguments failed Communicator's checks on this rank still takes part in
  // its round, so that every rank throws this rank's message (validate); point-to-point calls
  // have no round and throw here.
  [[noreturn]] void reject(const char* name, const std::string& problem) override {
    const Op op = op_named(name);
    if (op == Op::Send || op == Op::Recv) Communicator::reject(name, problem);
    next_slot(op).rejected = std::string(name) + " on " + *g_->desc + ": " + problem;
    rendezvous(op);
    throw Error("internal: sim round of a rejected " + std::string(name) + " did not fail");
  }

  std::vector<std::uint64_t> all_gather_u64(std::uint64_t value) override {
    next_slot(Op::AllGatherU64).u64 = value;
    rendezvous(Op::AllGatherU64);
    std::vector<std::uint64_t> values(static_cast<std::size_t>(size()));
    for (int j = 0; j < size(); ++j) values[std::size_t(j)] = peer(j).u64;
    return values;
  }

  void do_broadcast_string(std::string& text, int root) override {
    Slot& s = next_slot(Op::BroadcastString);
    s.root = root;
    if (rank_ == root) s.text = text;
    rendezvous(Op::BroadcastString);
    if (rank_ != root) text = peer(root).text;
  }

 private:
  Run& run() const { return g_->run; }
  int world_rank(int r) const { return g_->members[std::size_t(r)]; }
  RankState& me() const { return run().ranks[std::size_t(world_rank(rank_))]; }

  // This rank's slot for its next round, reset. Written without the lock: peers read only the
  // other parity (the previous round) until this round completes, and this parity was last read
  // in the round before that, which every peer finished before the previous round completed.
  // (After a failed wait the round never completes, so the parity is still unread.)
  Slot& next_slot(Op op) {
    Slot& s = g_->slots[round_ % 2][std::size_t(rank_)];
    s.op = op;
    s.t = DType::U8;
    s.rop = ReduceOp::Sum;
    s.root = 0;
    s.count = s.recv_count = 0;
    s.counts.clear();
    s.displs.clear();
    s.recv_counts.clear();
    s.recv_displs.clear();
    s.data.clear();
    s.offs.clear();
    s.color = s.key = 0;
    s.u64 = 0;
    s.text.clear();
    s.rejected.clear();
    return s;
  }
  Slot& next_data_slot(Op op, DType t, std::size_t count) {
    Slot& s = next_slot(op);
    s.t = t;
    s.count = count;
    return s;
  }
  // A peer's slot in the round this rank has just completed.
  const Slot& peer(int r) const { return g_->slots[(round_ - 1) % 2][std::size_t(r)]; }

  static std::byte* out(void* recv, std::size_t byte_offset) {
    return static_cast<std::byte*>(recv) + byte_offset;
  }

  // "rank 3" in the world, "rank 1 (world rank 3)" in a split group.
  std::string who(int r) const {
    std::string s = "rank " + std::to_string(r);
    if (*g_->desc != "sim world") s += " (world rank " + std::to_string(world_rank(r)) + ")";
    return s;
  }
  std::string where(Op op) const { return std::string(op_name(op)) + " on " + *g_->desc; }

  // What a world rank is doing right now, for timeout messages. Requires mu.
  std::string activity(int world) const {
    const RankState& st = run().ranks[std::size_t(world)];
    if (st.exited) return "it already returned from its SPMD body";
    if (st.in == nullptr) return "it is not inside any communicator call";
    return std::string("it is in ") + op_name(st.doing) + " on " + *st.in;
  }

  // Requires mu. Entry of every operation: a poisoned run fails at once.
  void enter(Op op) {
    throw_if_poisoned(op);
    me().doing = op;
    me().in = g_->desc;
  }
  void leave() { me().in.reset(); }

  void throw_if_poisoned(Op op) {
    if (!run().failed) return;
    leave();
    throw PeerFailure(where(op) + " cancelled on " + who(rank_) + ": " + run().cause);
  }
  [[noreturn]] void fail(const std::string& why) {
    run().poison(world_rank(rank_), why);
    leave();
    throw PeerFailure(why);
  }

  // Arrives at this rank's next round (its slot already filled) and returns, with mu held, once
  // every member has arrived; throws the round's validation Error on every rank.
  Lock rendezvous(Op op) {
    Lock lk(run().mu);
    enter(op);
    Group& g = *g_;
    g.here[std::size_t(rank_)] = 1;
    if (++g.arrived == g.size()) {
      complete();
      // Wake the members outside the lock, so they do not wake only to block on it again.
      lk.unlock();
      for (int r = 0; r < g.size(); ++r)
        if (r != rank_) run().ranks[std::size_t(world_rank(r))].cv.notify_one();
      lk.lock();
    } else {
      wait_for_round(lk, op);
    }
    ++round_;
    leave();
    if (!g.error.empty()) throw Error(g.error);
    return lk;
  }

  // Requires mu. Waits until the current round completes; fails on poison, on a missing member
  // that already returned, or on timeout.
  void wait_for_round(Lock& lk, Op op) {
    Group& g = *g_;
    const std::uint64_t gen = g.gen;
    const auto deadline = Clock::now() + run().timeout;
    while (g.gen == gen) {
      throw_if_poisoned(op);
      std::vector<int> missing;
      for (int r = 0; r < g.size(); ++r)
        if (!g.here[std::size_t(r)]) missing.push_back(r);
      for (int r : missing)
        if (run().ranks[std::size_t(world_rank(r))].exited)
          fail(where(op) + " failed on " + who(rank_) + ": " + who(r) +
               " returned from its SPMD body without calling " + op_name(op) +
               " (every rank of a communicator must call the same collectives)");
      if (Clock::now() >= deadline) {
        std::string why = where(op) + " timed out after " + seconds(run().timeout_s) + " s on " +
                          who(rank_) + ": waiting for";
        for (std::size_t i = 0; i < missing.size() && i < 8; ++i)
          why += std::string(i ? ";" : "") + " " + who(missing[i]) + " (" +
                 activity(world_rank(missing[i])) + ")";
        if (missing.size() > 8) why += "; and " + std::to_string(missing.size() - 8) + " more";
        fail(why);
      }
      me().cv.wait_until(lk, deadline);
    }
  }

  // Requires mu; run by the last rank to arrive, which then wakes the others.
  void complete() {
    Group& g = *g_;
    const std::vector<Slot>& slots = g.slots[g.gen % 2];
    g.error = validate(g, slots);
    if (g.error.empty() && slots[0].op == Op::Split) build_split(slots);
    g.arrived = 0;
    std::fill(g.here.begin(), g.here.end(), 0);
    ++g.gen;
  }

  // Requires mu. Ranks of equal color form a group ordered by (key, old rank).
  void build_split(const std::vector<Slot>& slots) {
    Group& g = *g_;
    std::map<int, std::vector<int>> by_color;
    for (int r = 0; r < g.size(); ++r) by_color[slots[std::size_t(r)].color].push_back(r);
    for (auto& [color, ranks] : by_color) {
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        return slots[std::size_t(a)].key < slots[std::size_t(b)].key;
      });
      std::vector<int> world;
      for (int r : ranks) world.push_back(g.members[std::size_t(r)]);
      auto child = std::make_shared<Group>(g.run, world, describe_split(color, world));
      for (std::size_t i = 0; i < ranks.size(); ++i)
        g.split_out[std::size_t(ranks[i])] = {child, int(i)};
    }
  }

  // dst = fold of block [offset, offset+count) of every rank's data, in rank order 0..n-1.
  void reduce_blocks(std::byte* dst, std::size_t offset, std::size_t count, DType t,
                     ReduceOp op) const {
    if (count == 0) return;
    const std::size_t es = dtype_size(t);
    std::memcpy(dst, peer(0).data.data() + offset * es, count * es);
    for (int j = 1; j < size(); ++j)
      reduce_into(t, op, dst, peer(j).data.data() + offset * es, count);
    if (op == ReduceOp::Avg) finish_avg(t, dst, count, size());
  }

  std::shared_ptr<Group> g_;
  int rank_;
  std::uint64_t round_ = 0;  // rounds this rank completed on g_ (== g_->gen when it arrives)
};

void SimComm::do_send(const void* buf, std::size_t count, DType t, int peer, int tag) {
  Msg m;
  m.buf = buf;
  m.count = count;
  m.t = t;
  Group& g = *g_;
  Lock lk(run().mu);
  enter(Op::Send);
  const auto key = std::make_tuple(rank_, peer, tag);
  g.mail[key].push_back(&m);
  RankState& receiver = run().ranks[std::size_t(world_rank(peer))];
  receiver.cv.notify_one();
  // Withdraw the message before failing, so no receiver takes a dangling pointer.
  auto withdraw = [&] {
    auto& q = g.mail[key];
    q.erase(std::find(q.begin(), q.end(), &m));
    if (q.empty()) g.mail.erase(key);
  };
  const auto deadline = Clock::now() + run().timeout;
  while (m.state != Msg::State::Done) {
    if (m.state == Msg::State::Taken) {  // receiver is copying: always wait for it
      me().cv.wait(lk);
      continue;
    }
    if (run().failed) withdraw();
    throw_if_poisoned(Op::Send);
    const std::string what = where(Op::Send) + " to " + who(peer) + " (tag " +
                             std::to_string(tag) + ") on " + who(rank_);
    if (receiver.exited) {
      withdraw();
      fail(what + ": the receiver returned from its SPMD body without a matching recv");
    }
    if (Clock::now() >= deadline) {
      withdraw();
      fail(what + " timed out after " + seconds(run().timeout_s) +
           " s: no matching recv (" + activity(world_rank(peer)) + ")");
    }
    me().cv.wait_until(lk, deadline);
  }
  leave();
  if (!m.error.empty()) throw Error(m.error);
}

void SimComm::do_recv(void* buf, std::size_t count, DType t, int peer, int tag) {
  Group& g = *g_;
  Lock lk(run().mu);
  enter(Op::Recv);
  const auto key = std::make_tuple(peer, rank_, tag);
  const std::string what = where(Op::Recv) + " from " + who(peer) + " (tag " +
                           std::to_string(tag) + ") on " + who(rank_);
  const RankState& sender = run().ranks[std::size_t(world_rank(peer))];
  const auto deadline = Clock::now() + run().timeout;
  Msg* m = nullptr;
  while (true) {
    if (auto it = g.mail.find(key); it != g.mail.end()) {
      m = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) g.mail.erase(it);
      break;
    }
    throw_if_poisoned(Op::Recv);
    if (sender.exited)
      fail(what + ": the sender returned from its SPMD body without a matching send");
    if (Clock::now() >= deadline)
      fail(what + " timed out after " + seconds(run().timeout_s) +
           " s: no matching send (" + activity(world_rank(peer)) + ")");
    me().cv.wait_until(lk, deadline);
  }
  auto& sender_cv = run().ranks[std::size_t(world_rank(peer))].cv;
  if (m->count != count || m->t != t) {
    m->error = what + ": expected " + std::to_string(count) + " x " +
               std::string(dtype_name(t)) + " but the sender sent " + std::to_string(m->count) +
               " x " + std::string(dtype_name(m->t));
    m->state = Msg::State::Done;
    sender_cv.notify_one();
    leave();
    throw Error(m->error);
  }
  m->state = Msg::State::Taken;
  lk.unlock();
  copy_bytes(buf, m->buf, count * dtype_size(t));
  lk.lock();
  m->state = Msg::State::Done;
  sender_cv.notify_one();
  leave();
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception (not derived from std::exception)";
  }
}

bool is_peer_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const PeerFailure&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void run(int world, const Options& opts, const std::function<void(Communicator&)>& body) {
  if (world < 1) throw Error("sim: world size must be >= 1 (got " + std::to_string(world) + ")");
  if (!(opts.timeout_s > 0)) throw Error("sim: timeout must be positive seconds");
  Run state(world, opts.timeout_s);
  std::vector<int> all(static_cast<std::size_t>(world));
  std::iota(all.begin(), all.end(), 0);
  auto group = std::make_shared<Group>(state, all, "sim world");
  std::vector<std::unique_ptr<SimComm>> comms;
  for (int r = 0; r < world; ++r) comms.push_back(std::make_unique<SimComm>(group, r));
  group.reset();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world));

  auto rank_main = [&](int r) {
    std::exception_ptr err;
    try {
      body(*comms[std::size_t(r)]);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(state.mu);
    state.ranks[std::size_t(r)].exited = true;
    if (err) {
      errors[std::size_t(r)] = err;
      state.fail_order.push_back(r);
      state.poison(r, "rank " + std::to_string(r) + " failed: " + what_of(err));
    }
    // Peers waiting for this rank notice that it will never arrive.
    for (auto& rs : state.ranks) rs.cv.notify_one();
  };

  std::vector<std::thread> threads;
  threads.reserve(std::size_t(world));
  try {
    for (int r = 0; r < world; ++r) threads.emplace_back(rank_main, r);
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lk(state.mu);
      state.poison(-1, "sim: could not start rank thread " + std::to_string(threads.size()) + ": " +
                   e.what());
      // Ranks never started count as returned, so started ones stop waiting for them.
      for (std::size_t r = threads.size(); r < std::size_t(world); ++r)
        state.ranks[r].exited = true;
    }
    for (auto& th : threads) th.join();
    throw Error("sim: could not start " + std::to_string(world) + " rank threads: " + e.what());
  }
  for (auto& th : threads) th.join();
  comms.clear();

  if (state.fail_order.empty()) return;
  // Root cause: the first rank that failed with something other than PeerFailure; if all are
  // PeerFailures (a timeout, a rank that returned early), the one that detected it first.
  int root = -1;
  for (int r : state.fail_order)
    if (!is_peer_failure(errors[std::size_t(r)])) {
      root = r;
      break;
    }
  if (root < 0)
    root = state.origin >= 0 && errors[std::size_t(state.origin)] ? state.origin
                                                                  : state.fail_order.front();
  const std::exception_ptr& err = errors[std::size_t(root)];
  if (world > 1) {
    try {
      std::rethrow_exception(err);
    } catch (const Error& e) {
      if (typeid(e) == typeid(Error))
        throw Error("rank " + std::to_string(root) + " failed: " + e.what());
    } catch (...) {
    }
  }
  std::rethrow_exception(err);
}

}  // namespace shardcal::sim
