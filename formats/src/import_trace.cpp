// torch.profiler trace reader (import_trace.hpp): a gzip/plain byte source, nlohmann's SAX
// interface building one small DOM per event (never the whole trace), and the merge of several
// ranks' traces.
#include "shardcal/formats/import_trace.hpp"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <streambuf>
#include <istream>
#include <tuple>
#include <unordered_map>

#include "shardcal/error.hpp"

namespace shardcal::formats {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Bytes: a std::streambuf over a pull function of raw bytes, inflating gzip (zlib, windowBits
// 15 + 16; several members one after another, as gzip(1) and gzip.open append) when the first
// two bytes are gzip's magic 1f 8b (RFC 1952). It hashes the raw bytes (sha256) as they pass.

class TraceBuf : public std::streambuf {
 public:
  using Pull = std::function<std::size_t(char*, std::size_t)>;  // 0 = end of input
  TraceBuf(Pull pull, std::string name) : pull_(std::move(pull)), name_(std::move(name)) {
    md_.reset(EVP_MD_CTX_new());
    if (!md_ || EVP_DigestInit_ex(md_.get(), EVP_sha256(), nullptr) != 1)
      throw Error(name_ + ": cannot start sha256 (OpenSSL)");
    fill_raw();
    gzip_ = raw_len_ >= 2 && static_cast<unsigned char>(raw_[0]) == 0x1f &&
            static_cast<unsigned char>(raw_[1]) == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 15 + 16) != Z_OK) throw Error(name_ + ": cannot start zlib");
      zinit_ = true;
    }
  }
  ~TraceBuf() override {
    if (zinit_) inflateEnd(&zs_);
  }
  TraceBuf(const TraceBuf&) = delete;
  TraceBuf& operator=(const TraceBuf&) = delete;

  bool gzip() const { return gzip_; }
  std::uint64_t raw_bytes() const { return raw_total_; }
  // Non-empty when the byte source failed (a gzip stream cut short or corrupt): the reason.
  const std::string& error() const { return error_; }
  // True once the parser asked for more than the input holds.
  bool exhausted() const { return exhausted_; }
  std::string sha256_hex() {
    // Hash what the parser did not consume (trailing bytes after the JSON) too.
    while (!raw_eof_) {
      raw_pos_ = raw_len_;
      fill_raw();
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(md_.get(), d, &n) != 1) throw Error(name_ + ": sha256 failed");
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < n; ++i) s += hex[d[i] >> 4], s += hex[d[i] & 15];
    return s;
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    std::size_t n = gzip_ ? inflate_some() : copy_some();
    if (n == 0) {
      exhausted_ = true;
      return traits_type::eof();
    }
    setg(out_, out_, out_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  struct MdFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  void fill_raw() {
    if (raw_eof_ || raw_pos_ < raw_len_) return;
    raw_len_ = pull_(raw_, sizeof raw_);
    raw_pos_ = 0;
    if (raw_len_ == 0) {
      raw_eof_ = true;
      return;
    }
    raw_total_ += raw_len_;
    EVP_DigestUpdate(md_.get(), raw_, raw_len_);
  }
  std::size_t copy_some() {
    fill_raw();
    if (raw_pos_ >= raw_len_) return 0;
    const std::size_t n = std::min(raw_len_ - raw_pos_, sizeof out_);
    std::memcpy(out_, raw_ + raw_pos_, n);
    raw_pos_ += n;
    return n;
  }
  std::size_t inflate_some() {
    if (!error_.empty() || done_) return 0;
    while (true) {
      fill_raw();
      if (raw_pos_ >= raw_len_ && raw_eof_) {
        if (in_member_) error_ = "the gzip stream is cut short (the file ends inside it)";
        done_ = true;
        return 0;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(raw_ + raw_pos_);
      zs_.avail_in = static_cast<uInt>(raw_len_ - raw_pos_);
      zs_.next_out = reinterpret_cast<Bytef*>(out_);
      zs_.avail_out = sizeof out_;
      in_member_ = true;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      raw_pos_ = raw_len_ - zs_.avail_in;
      const std::size_t got = sizeof out_ - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        in_member_ = false;
        inflateReset(&zs_);  // another member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        error_ = std::string("the gzip stream is corrupt (zlib: ") +
                 (zs_.msg ? zs_.msg : "error " + std::to_string(rc)) + ")";
        done_ = true;
        return got;
      }
      if (got > 0) return got;
    }
  }

  Pull pull_;
  std::string name_;
  std::unique_ptr<EVP_MD_CTX, MdFree> md_;
  char raw_[1 << 16];
  std::size_t raw_len_ = 0, raw_pos_ = 0;
  bool raw_eof_ = false;
  std::uint64_t raw_total_ = 0;
  char out_[1 << 16];
  bool gzip_ = false, zinit_ = false, in_member_ = false, done_ = false, exhausted_ = false;
  z_stream zs_{};
  std::string error_;
};

// ---------------------------------------------------------------------------------------------
// Reading args.

std::string id_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return "";
}

std::optional<std::int64_t> int_of(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return std::int64_t(d);
    return std::nullopt;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.empty() || s.size() > 18) return std::nullopt;
    std::int64_t x = 0;
    std::size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return std::nullopt;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
      x = x * 10 + (s[i] - '0');
    }
    return s[0] == '-' ? -x : x;
  }
  return std::nullopt;
}

std::string str_of(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return "";
}

// ---------------------------------------------------------------------------------------------
// Sizes of one call.

// Elements of an "Input Dims" entry: a shape [a, b] (its product), a list of shapes (the sum,
// recursively: TensorList, Tensor[][]), nullopt when empty (an undefined tensor, or a list that
// older torch did not flatten) or not numbers.
std::optional<std::int64_t> numel(const json& dims) {
  if (!dims.is_array() || dims.empty()) return std::nullopt;
  if (dims[0].is_array()) {
    std::int64_t s = 0;
    for (const json& d : dims) {
      auto n = numel(d);
      if (!n) return std::nullopt;
      s += *n;
      if (s > (std::int64_t(1) << 50)) return std::nullopt;
    }
    return s;
  }
  std::int64_t p = 1;
  for (const json& d : dims) {
    auto x = int_of(d);
    if (!x || *x < 0 || *x > (std::int64_t(1) << 50)) return std::nullopt;
    p *= *x;
    if (p > (std::int64_t(1) << 50)) return std::nullopt;
  }
  return p;
}

struct Sizes {
  std::optional<Collective> coll;
  std::string skip;        // set: not imported, why
  std::string torch_name;
  std::int64_t in = -1, out = -1;
  std::optional<DType> dtype;
  int group_size = 0;
  std::vector<int> ranks;
  std::string pg_name, pg_desc;
  bool uneven = false;
  std::string from;
  std::int64_t seq = -1;  // "Seq": the call's sequence number in its process group; -1: none
  std::string bad;        // set: a count beyond any real job (the trace is corrupt)
};

constexpr std::int64_t kMaxElems = std::int64_t(1) << 50;  // elements of one call, at most
constexpr std::int64_t kMaxRanks = std::int64_t(1) << 24;  // ranks of a job, at most

std::optional<std::vector<int>> ranks_of(const json& v) {
  std::optional<std::vector<std::int64_t>> l;
  if (v.is_string()) l = trace_detail::int_list(v.get<std::string>());
  else if (v.is_array()) l = trace_detail::int_list(v.dump());
  if (!l) return std::nullopt;
  std::vector<int> r;
  for (auto x : *l) {
    if (x < 0 || x > (1 << 24)) return std::nullopt;
    r.push_back(int(x));
  }
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end()) return std::nullopt;
  return r;
}

bool uneven_split(const json& v) {
  std::optional<std::vector<std::int64_t>> l;
  if (v.is_string()) l = trace_detail::int_list(v.get<std::string>());
  else if (v.is_array()) l = trace_detail::int_list(v.dump());
  if (!l) return v.is_string() && v.get<std::string>().find("...") != std::string::npos;
  return !l->empty() && std::adjacent_find(l->begin(), l->end(), std::not_equal_to<>()) != l->end();
}

// From torch's comm metadata (kernel args or record_param_comms). False when it has none.
bool sizes_from_meta(const json& a, Sizes& s, const char* from) {
  if (!a.contains("Collective name")) return false;
  s.torch_name = str_of(a, "Collective name");
  s.coll = trace_detail::collective_of(s.torch_name, s.skip);
  auto count = [&](const char* key, std::int64_t most) -> std::int64_t {
    if (!a.contains(key)) return -1;
    const auto v = int_of(a[key]);
    if (!v) return -1;
    if (*v < 0 || *v > most) {
      if (s.bad.empty()) s.bad = std::string(key) + " " + a[key].dump();
      return -1;
    }
    return *v;
  };
  s.in = count("In msg nelems", kMaxElems);
  s.out = count("Out msg nelems", kMaxElems);
  s.dtype = trace_detail::dtype_of(str_of(a, "dtype"));
  s.group_size = int(std::max<std::int64_t>(0, count("Group size", kMaxRanks)));
  // torch's per-process-group sequence number (torch/csrc/profiler/util.h kSeqNum = "Seq"):
  // the same call has the same number on every rank of its group.
  if (a.contains("Seq"))
    if (auto q = int_of(a["Seq"]); q && *q >= 0) s.seq = *q;
  if (a.contains("Process Group Ranks"))
    if (auto r = ranks_of(a["Process Group Ranks"])) s.ranks = *r;
  // A list torch truncated ("[0, 1, ...]"): the ranks from the start and stride it also writes.
  if (s.ranks.empty() && s.group_size > 1 && a.contains("Global rank start") &&
      a.contains("Global rank stride")) {
    const auto start = int_of(a["Global rank start"]), stride = int_of(a["Global rank stride"]);
    if (start && stride && *start >= 0 && *stride >= 1 &&
        *start + *stride * std::int64_t(s.group_size) < (std::int64_t(1) << 24))
      for (int i = 0; i < s.group_size; ++i) s.ranks.push_back(int(*start + *stride * i));
  }
  s.pg_name = str_of(a, "Process Group Name");
  s.pg_desc = str_of(a, "Process Group Description");
  for (const char* k : {"In split size", "Out split size"})
    if (a.contains(k) && uneven_split(a[k])) s.uneven = true;
  s.from = from;
  return true;
}

// From a c10d:: op's Input Dims, by the op schemas of torch/csrc/distributed/c10d/Ops.cpp (as in
// the 2.15 wheel): which input is the output / input tensor (list). False when not a c10d op.
bool sizes_from_c10d(const std::string& op_name, const json& dims, const json& types,
                     const json& concrete, Sizes& s) {
  if (op_name.rfind("c10d::", 0) != 0) return false;
  std::string base = op_name.substr(6);
  s.torch_name = base;
  auto dim = [&](std::size_t i) -> std::optional<std::int64_t> {
    if (!dims.is_array() || i >= dims.size()) return std::nullopt;
    return numel(dims[i]);
  };
  auto type = [&](std::size_t i) -> std::optional<DType> {
    if (!types.is_array() || i >= types.size() || !types[i].is_string()) return std::nullopt;
    return trace_detail::dtype_of(types[i].get<std::string>());
  };
  s.from = "Input Dims of " + op_name;
  // (output position, input position): -1 = none
  if (base == "allreduce_" || base == "allreduce_coalesced_" || base == "broadcast_") {
    s.in = s.out = dim(0).value_or(-1);
    s.dtype = type(0);
  } else if (base == "_allgather_base_" || base == "allgather_into_tensor_coalesced_" ||
             base == "_reduce_scatter_base_" || base == "reduce_scatter_tensor_coalesced_" ||
             base == "alltoall_base_" || base == "alltoall_") {
    s.out = dim(0).value_or(-1);
    s.in = dim(1).value_or(-1);
    s.dtype = type(1) ? type(1) : type(0);
    if (base == "alltoall_base_" && concrete.is_array()) {
      const json& c = concrete;
      for (std::size_t i : {std::size_t(3), std::size_t(4)})
        if (i < c.size() && uneven_split(c[i])) s.uneven = true;
    }
  } else if (base == "allgather_") {  // (Tensor[][] outputs, Tensor[] inputs)
    s.in = dim(1).value_or(-1);
    s.out = dim(0).value_or(-1);
    s.dtype = type(1);
  } else if (base == "reduce_scatter_") {  // (Tensor[] outputs, Tensor[][] inputs)
    s.out = dim(0).value_or(-1);
    s.in = dim(1).value_or(-1);
    s.dtype = type(0);
  }
  // c10d's op name -> torch's collective name spelling (minus the trailing '_').
  std::string coll_name = base;
  if (!coll_name.empty() && coll_name.back() == '_') coll_name.pop_back();
  s.coll = trace_detail::collective_of(coll_name, s.skip);
  return true;
}

// ---------------------------------------------------------------------------------------------
// What one event yields.

struct CommOp {  // a CPU op that can give a kernel its sizes
  std::string name;
  std::int64_t ext = -1;
  std::string tid;  // pid/tid as text (both may be strings in Kineto output)
  double ts = 0, dur = 0;
  bool barrier = false;          // c10d::barrier, or comm metadata naming a barrier
  std::optional<Sizes> meta;     // record_param_comms: its comm metadata, parsed
  json dims, types, concrete;    // c10d:: ops: Input Dims, Input type, Concrete Inputs
};

struct KernelEv {
  std::string name;
  double ts = 0, dur = 0;
  std::int64_t ext = -1;
  int device = -1;
  std::optional<Sizes> meta;  // the comm metadata torch copied into the kernel's args, parsed
};

// ---------------------------------------------------------------------------------------------
// The SAX handler: a state machine over the top-level object. Values of the keys we need are
// built as small DOMs (distributedInfo, deviceProperties, each event of traceEvents); the rest
// is skipped without building anything.

class TraceSax {
 public:
  explicit TraceSax(std::string name) : name_(std::move(name)) {}

  std::vector<KernelEv> kernels;
  std::vector<CommOp> ops;
  json distributed, devices;
  std::string host_name;
  bool record_shapes = false, saw_events = false, saw_root = false;
  int c10d_ops = 0;
  std::string parse_error_text;
  bool too_deep = false;
  static constexpr std::size_t kMaxNesting = 64;

  bool null() { return value(json(nullptr)); }
  bool boolean(bool b) { return value(json(b)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return value(json(v)); }
  bool string(std::string& s) { return value(json(std::move(s))); }
  bool binary(json::binary_t&) { return value(json(nullptr)); }
  bool key(std::string& k) {
    if (!stack_.empty()) {
      key_ = std::move(k);
      return true;
    }
    if (skip_ > 0) return true;
    if (depth_ == 1) top_key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t pos, const std::string& last, const nlohmann::detail::exception& e) {
    const std::string what = e.what();
    if (what.find("unexpected end of input") != std::string::npos || last.empty())
      parse_error_text = "the JSON ends at byte " + std::to_string(pos) +
                         " before the trace is complete (cut short: a job killed while writing "
                         "it, or a partial copy)";
    else
      parse_error_text = "malformed JSON at byte " + std::to_string(pos) + " (" + what + ")";
    return false;
  }

 private:
  enum class Capture { None, Distributed, Devices, Event };

  // A value inside a DOM being built, or a top-level primitive.
  bool value(json v) {
    if (!stack_.empty()) {
      insert(std::move(v));
      return true;
    }
    if (skip_ > 0) return true;
    if (depth_ == 0) return not_a_trace("the JSON is not an object");
    if (depth_ == 1) {
      if (top_key_ == "host_name" || top_key_ == "hostname") {
        if (v.is_string()) host_name = v.get<std::string>();
      } else if (top_key_ == "record_shapes") {
        record_shapes = (v.is_number() && v.get<double>() != 0) ||
                        (v.is_string() && v.get<std::string>() == "1") ||
                        (v.is_boolean() && v.get<bool>());
      } else if (top_key_ == "distributedInfo" && v.is_string()) {
        // Older exporters wrote the metadata as a JSON string (nesting capped as events are).
        distributed = json::parse(
            v.get<std::string>(),
            [](int depth, json::parse_event_t, json&) { return depth <= int(kMaxNesting); },
            false);
      }
    }
    return true;  // primitives inside traceEvents: not events, ignored
  }
  bool open(json container) {
    if (!stack_.empty()) {
      // torch nests a few levels (an event, its args, a list of shapes of a tensor list); the
      // values are copied and walked recursively afterwards, so a deeper one is refused.
      if (stack_.size() >= kMaxNesting) {
        too_deep = true;
        parse_error_text = "a value nested more than " + std::to_string(kMaxNesting) +
                           " levels deep (torch writes a few); not a torch.profiler trace";
        return false;
      }
      json* added = insert(std::move(container));
      stack_.push_back(added);
      return true;
    }
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (depth_ == 0) {
      if (!container.is_object()) return not_a_trace("the JSON is not an object");
      saw_root = true;
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      if (top_key_ == "traceEvents" && container.is_array()) {
        saw_events = true;
        depth_ = 2;
        return true;
      }
      capture_ = top_key_ == "distributedInfo"    ? Capture::Distributed
                 : top_key_ == "deviceProperties" ? Capture::Devices
                                                  : Capture::None;
      if (capture_ == Capture::None) {
        skip_ = 1;
        return true;
      }
      root_ = std::move(container);
      stack_.push_back(&root_);
      return true;
    }
    // depth_ == 2: an element of traceEvents
    if (!container.is_object()) {
      skip_ = 1;
      return true;
    }
    capture_ = Capture::Event;
    root_ = std::move(container);
    stack_.push_back(&root_);
    return true;
  }
  bool close() {
    if (!stack_.empty()) {
      stack_.pop_back();
      if (stack_.empty()) finish_capture();
      return true;
    }
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    --depth_;  // 2 -> 1 (end of traceEvents), 1 -> 0 (end of the root)
    return true;
  }
  json* insert(json v) {
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  void finish_capture() {
    if (capture_ == Capture::Distributed) distributed = std::move(root_);
    else if (capture_ == Capture::Devices) devices = std::move(root_);
    else if (capture_ == Capture::Event) event(root_);
    root_ = json();
    capture_ = Capture::None;
  }
  bool not_a_trace(const char* why) {
    parse_error_text = std::string("not a torch.profiler trace (") + why + ")";
    return false;
  }

  void event(const json& e) {
    if (str_of(e, "ph") != "X") return;
    const std::string name = str_of(e, "name");
    const std::string cat = str_of(e, "cat");
    double ts = 0, dur = -1;  // plain doubles: GCC 12 misreads optional<double> here
    if (auto it = e.find("ts"); it != e.end() && it->is_number()) ts = it->get<double>();
    if (auto it = e.find("dur"); it != e.end() && it->is_number()) dur = it->get<double>();
    if (!std::isfinite(ts)) ts = 0;
    if (!std::isfinite(dur)) dur = -1;
    const json empty = json::object();
    const json& args = e.contains("args") && e["args"].is_object() ? e["args"] : empty;
    std::int64_t ext = -1;
    if (auto it = args.find("External id"); it != args.end())
      if (auto x = int_of(*it)) ext = *x;
    const bool kernel_cat = cat == "kernel" || cat == "Kernel";
    if (kernel_cat && (name.rfind("ncclKernel_", 0) == 0 || name.rfind("ncclDevKernel_", 0) == 0)) {
      KernelEv k;
      k.name = name.substr(0, name.find('('));
      k.ts = ts;
      k.dur = dur;
      k.ext = ext;
      if (auto it = args.find("device"); it != args.end())
        if (auto d = int_of(*it); d && *d >= 0 && *d < kMaxRanks) k.device = int(*d);
      Sizes m;
      if (sizes_from_meta(args, m, "kernel args")) k.meta = std::move(m);
      kernels.push_back(std::move(k));
      return;
    }
    if (kernel_cat) return;
    const bool c10d = name.rfind("c10d::", 0) == 0;
    if (c10d) ++c10d_ops;
    if (c10d || name == "record_param_comms" || name.rfind("nccl:", 0) == 0) {
      CommOp op;
      op.name = name;
      op.ext = ext;
      op.tid = (e.contains("pid") ? id_text(e["pid"]) : "") + "/" +
               (e.contains("tid") ? id_text(e["tid"]) : "");
      op.ts = ts;
      op.dur = std::max(0.0, dur);
      if (name == "record_param_comms") {
        Sizes m;
        if (sizes_from_meta(args, m, "record_param_comms")) {
          op.barrier = m.torch_name == "barrier";
          op.meta = std::move(m);
        }
      } else if (c10d) {
        op.barrier = name == "c10d::barrier";
        if (auto it = args.find("Input Dims"); it != args.end()) op.dims = *it;
        if (auto it = args.find("Input type"); it != args.end()) op.types = *it;
        if (auto it = args.find("Concrete Inputs"); it != args.end()) op.concrete = *it;
      }
      ops.push_back(std::move(op));
    }
  }

  std::string name_;
  int depth_ = 0;     // 0 before the root, 1 in the root, 2 in traceEvents
  int skip_ = 0;      // open containers of a skipped value
  std::string top_key_, key_;
  Capture capture_ = Capture::None;
  json root_;
  std::vector<json*> stack_;
};

// S of the collective table from torch's per-rank element counts.
// -1: no size; -2: more bytes than any real call (2^50 elements), the counts are corrupt.
std::int64_t table_bytes_of(Collective c, std::int64_t in, std::int64_t out, int n, DType t) {
  const std::int64_t es = std::int64_t(dtype_size(t));
  std::int64_t e = -1;
  bool overflow = false;
  auto times_n = [&](std::int64_t x) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(x, std::int64_t(n), &r)) overflow = true;
    return r;
  };
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast: e = in > 0 ? in : out; break;
    case Collective::AllGather: e = out > 0 ? out : (in > 0 ? times_n(in) : -1); break;
    case Collective::ReduceScatter: e = in > 0 ? in : (out > 0 ? times_n(out) : -1); break;
    case Collective::AllToAll: e = in > 0 ? in : out; break;
    case Collective::Gather: e = in > 0 ? times_n(in) : -1; break;
    case Collective::Scatter: e = out > 0 ? times_n(out) : -1; break;
  }
  if (overflow || e > kMaxElems / es) return -2;
  if (e <= 0) return -1;
  return e * es;
}

// NCCL kernel name -> collective (the token after the prefix) and dtype (a type token).
void from_kernel_name(const std::string& k, std::optional<Collective>& coll, std::string& skip,
                      std::optional<DType>& dtype, std::string& redop) {
  std::string rest = k.substr(k.rfind("ncclKernel_", 0) == 0 ? 11 : 14);
  std::vector<std::string> tok;
  std::size_t p = 0;
  while (p <= rest.size()) {
    std::size_t q = rest.find('_', p);
    if (q == std::string::npos) q = rest.size();
    tok.push_back(rest.substr(p, q - p));
    p = q + 1;
  }
  if (!tok.empty()) coll = trace_detail::collective_of(tok[0], skip);
  for (std::size_t i = 1; i < tok.size(); ++i)
    if (auto t = trace_detail::dtype_of(tok[i])) dtype = t;
    else if (tok[i] == "Sum") redop = "sum";
    else if (tok[i] == "Prod") redop = "prod";
    else if (tok[i] == "Max") redop = "max";
    else if (tok[i] == "Min") redop = "min";
    // NCCL's average: ncclAvg runs as PreMulSum (or SumPostDiv for integers)
    else if (tok[i] == "Avg" || tok[i] == "PreMulSum" || tok[i] == "SumPostDiv") redop = "avg";
}

ParsedTrace build(TraceSax& sax, TraceBuf& buf, const std::string& name) {
  ParsedTrace t;
  t.name = name;
  t.gzip = buf.gzip();
  t.sha256 = buf.sha256_hex();
  t.file_bytes = buf.raw_bytes();
  t.record_shapes = sax.record_shapes;
  t.host_name = sax.host_name;
  t.c10d_ops = sax.c10d_ops;
  const json& d = sax.distributed;
  if (d.is_object()) {
    if (d.contains("rank")) {
      auto r = int_of(d["rank"]);
      if (r && *r >= 0 && *r < (1 << 24)) t.rank = int(*r);
    }
    if (d.contains("world_size")) {
      auto w = int_of(d["world_size"]);
      if (w && *w >= 1 && *w <= (1 << 24)) t.world_size = int(*w);
    }
    t.backend = str_of(d, "backend");
    t.nccl_version = str_of(d, "nccl_version");
    if (d.contains("pg_config") && d["pg_config"].is_array())
      for (const json& g : d["pg_config"]) {
        if (!g.is_object()) continue;
        TracePgConfig c;
        c.name = str_of(g, "pg_name");
        c.desc = str_of(g, "pg_desc");
        if (g.contains("pg_size"))
          if (auto z = int_of(g["pg_size"]); z && *z >= 0 && *z <= kMaxRanks) c.size = int(*z);
        if (g.contains("ranks"))
          if (auto r = ranks_of(g["ranks"])) c.ranks = *r;
        t.pg_config.push_back(std::move(c));
      }
  }
  if (sax.devices.is_array())
    for (const json& dv : sax.devices)
      if (dv.is_object() && dv.contains("id"))
        if (auto id = int_of(dv["id"])) t.gpus[int(*id)] = str_of(dv, "name");

  // CPU comm ops: by External id, and per thread in time order (for the enclosing op).
  std::unordered_map<std::int64_t, std::size_t> by_ext;
  for (std::size_t i = 0; i < sax.ops.size(); ++i)
    if (sax.ops[i].ext >= 0) by_ext.try_emplace(sax.ops[i].ext, i);
  std::map<std::string, std::vector<std::size_t>> by_tid;
  for (std::size_t i = 0; i < sax.ops.size(); ++i) by_tid[sax.ops[i].tid].push_back(i);
  for (auto& [tid, v] : by_tid)
    std::sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
      return sax.ops[a].ts < sax.ops[b].ts;
    });
  // The linked op and the ops around it on its thread, innermost first.
  auto chain = [&](std::int64_t ext) {
    std::vector<const CommOp*> out;
    auto it = by_ext.find(ext);
    if (it == by_ext.end()) return out;
    const CommOp& op = sax.ops[it->second];
    out.push_back(&op);
    const auto& v = by_tid[op.tid];
    auto pos = std::upper_bound(v.begin(), v.end(), op.ts, [&](double ts, std::size_t i) {
      return ts < sax.ops[i].ts;
    });
    int looked = 0;
    while (pos != v.begin() && looked < 64) {
      --pos;
      ++looked;
      const CommOp& o = sax.ops[*pos];
      if (&o == &op) continue;
      if (o.ts <= op.ts && op.ts <= o.ts + o.dur) out.push_back(&o);
    }
    return out;
  };
  int single_pg = -1;
  if (t.pg_config.size() == 1) single_pg = 0;

  std::sort(sax.kernels.begin(), sax.kernels.end(),
            [](const KernelEv& a, const KernelEv& b) { return a.ts < b.ts; });
  t.nccl_kernels = int(sax.kernels.size());
  for (const KernelEv& k : sax.kernels) {
    Sizes s;
    std::optional<Collective> kcoll;
    std::string kskip;
    std::optional<DType> kdtype;
    std::string kredop;
    from_kernel_name(k.name, kcoll, kskip, kdtype, kredop);
    bool barrier = false;
    const auto ops = chain(k.ext);
    for (const CommOp* o : ops) barrier = barrier || o->barrier;
    bool have = false;
    if (k.meta) s = *k.meta, have = true;
    if (!have)
      for (const CommOp* o : ops)
        if (o->meta) {
          s = *o->meta;
          have = true;
          break;
        }
    if (!have)
      for (const CommOp* o : ops)
        if (sizes_from_c10d(o->name, o->dims, o->types, o->concrete, s)) {
          have = true;
          break;
        }
    auto skip = [&](const std::string& why) { ++t.skipped[why]; };
    if (have && !s.bad.empty())
      throw Error(name + ": an NCCL kernel at ts " + std::to_string(k.ts) + ": its comm metadata "
                  "says " + s.bad + ", beyond any real job (2^50 elements, 2^24 ranks); the "
                  "trace is corrupt (nothing imported)");
    if (barrier) {
      skip("barrier");
      continue;
    }
    if (!have) {
      // Nothing but the kernel: its name tells the collective, never the size.
      if (!kcoll && !kskip.empty()) skip(kskip);
      else skip("no sizes (no comm metadata, no linked c10d:: op with Input Dims)");
      continue;
    }
    if (!s.coll) {
      skip(s.skip.empty() ? "other" : s.skip);
      continue;
    }
    if (!s.dtype) s.dtype = kdtype;
    if (!s.dtype) {
      skip("unknown dtype");
      continue;
    }
    if (s.uneven) {
      skip("uneven split sizes (v-form all_to_all)");
      continue;
    }
    if (k.dur <= 0) {
      skip("no duration");
      continue;
    }
    // The group: the metadata's ranks, else the pg_config entry of its name, else the one group.
    if (s.ranks.empty() && !s.pg_name.empty())
      for (const TracePgConfig& c : t.pg_config)
        if (c.name == s.pg_name && !c.ranks.empty()) s.ranks = c.ranks;
    if (s.ranks.empty() && single_pg == 0 && !t.pg_config[0].ranks.empty()) {
      s.ranks = t.pg_config[0].ranks;
      if (s.pg_name.empty()) s.pg_name = t.pg_config[0].name;
      if (s.pg_desc.empty()) s.pg_desc = t.pg_config[0].desc;
    }
    if (s.ranks.empty() && s.group_size > 0 && t.world_size && s.group_size == *t.world_size)
      for (int r = 0; r < s.group_size; ++r) s.ranks.push_back(r);
    if (s.ranks.empty()) {
      skip("no process group (its ranks are not in the trace)");
      continue;
    }
    if (s.group_size > 0 && s.group_size != int(s.ranks.size()))
      throw Error(name + ": an NCCL kernel at ts " + std::to_string(k.ts) + " says Group size " +
                  std::to_string(s.group_size) + " but its process group has " +
                  std::to_string(s.ranks.size()) +
                  " ranks; the trace is inconsistent (edited, or from another tool)");
    const int n = int(s.ranks.size());
    if (n < 2) {
      skip("a group of one rank");
      continue;
    }
    const std::int64_t bytes = table_bytes_of(*s.coll, s.in, s.out, n, *s.dtype);
    if (bytes == -2)
      throw Error(name + ": an NCCL kernel at ts " + std::to_string(k.ts) + ": " +
                  std::string(collective_info(*s.coll).name) + " of " + std::to_string(s.in) +
                  " in / " + std::to_string(s.out) + " out elements over " + std::to_string(n) +
                  " ranks is more than 2^50 elements; the trace is corrupt (nothing imported)");
    if (bytes <= 0) {
      skip("no sizes (no comm metadata, no linked c10d:: op with Input Dims)");
      continue;
    }
    TraceCall c;
    c.collective = *s.coll;
    c.torch_name = s.torch_name;
    c.dtype = *s.dtype;
    c.bytes = bytes;
    c.group_size = n;
    c.group_ranks = s.ranks;
    c.pg_name = s.pg_name;
    c.pg_desc = s.pg_desc;
    c.ts_us = k.ts;
    c.dur_us = k.dur;
    c.sizes_from = s.from;
    c.kernel = k.name;
    if (collective_info(c.collective).reduces) c.redop = kredop.empty() ? "sum" : kredop;
    c.device = k.device;
    c.seq = s.seq;
    t.calls.push_back(std::move(c));
  }
  return t;
}

ParsedTrace parse_stream(TraceBuf::Pull pull, const std::string& name) {
  TraceBuf buf(std::move(pull), name);
  std::istream in(&buf);
  TraceSax sax(name);
  bool ok = false;
  try {
    ok = json::sax_parse(in, &sax, json::input_format_t::json, true, false);
  } catch (const json::exception& e) {
    sax.parse_error_text = e.what();
  }
  if (!buf.error().empty())
    throw Error(name + ": " + buf.error() + "; copy the trace again (nothing imported)");
  if (!ok && sax.too_deep) throw Error(name + ": " + sax.parse_error_text + "; nothing imported");
  if (!ok) {
    if (!sax.saw_root)
      throw Error(name + ": not a torch.profiler trace (" +
                  (buf.raw_bytes() == 0 ? std::string("the file is empty")
                   : sax.parse_error_text.rfind("not a", 0) == 0
                       ? sax.parse_error_text.substr(sax.parse_error_text.find('(') + 1,
                                                     sax.parse_error_text.size() -
                                                         sax.parse_error_text.find('(') - 2)
                       : std::string("not JSON")) +
                  ")");
    if (buf.exhausted() && sax.saw_root)  // the JSON stopped with the bytes
      throw Error(name + ": the JSON ends at byte " + std::to_string(buf.raw_bytes()) +
                  " before the trace is complete (cut short: a job killed while writing it, or "
                  "a partial copy); nothing imported");
    throw Error(name + ": " +
                (sax.parse_error_text.empty() ? std::string("malformed JSON")
                                              : sax.parse_error_text) +
                "; nothing imported");
  }
  if (!sax.saw_events)
    throw Error(name + ": not a torch.profiler trace (no \"traceEvents\" array); export it with "
                       "torch.profiler's export_chrome_trace or tensorboard_trace_handler");
  return build(sax, buf, name);
}

std::string lower_alnum(std::string_view s) {
  std::string o;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      o += char(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

std::string group_text(const std::vector<int>& r) {
  std::string s;
  for (std::size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r[i]);
  return s;
}

}  // namespace

namespace trace_detail {

std::optional<Collective> collective_of(std::string_view name, std::string& skip) {
  const std::string n = lower_alnum(name);
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  if (n.find("barrier") != std::string::npos) return skip = "barrier", std::nullopt;
  if (starts("sendrecv") || n == "send" || n == "recv" || starts("p2p") ||
      n == "batchisendirecv")
    return skip = "send/recv", std::nullopt;
  if (starts("allreduce")) return Collective::AllReduce;
  if (starts("allgather")) return Collective::AllGather;
  if (starts("reducescatter")) return Collective::ReduceScatter;
  if (starts("alltoall")) return Collective::AllToAll;
  if (starts("broadcast")) return Collective::Broadcast;
  if (n == "gather" || n == "gathersingle") return Collective::Gather;
  if (n == "scatter") return Collective::Scatter;
  if (starts("reduce")) return skip = "reduce (not in shardcal's collective table)", std::nullopt;
  skip = "other (" + std::string(name.substr(0, 40)) + ")";
  return std::nullopt;
}

std::optional<DType> dtype_of(std::string_view name) {
  static const std::pair<const char*, DType> table[] = {
      {"Float", DType::F32},        {"float", DType::F32},      {"f32", DType::F32},
      {"float32", DType::F32},      {"Double", DType::F64},     {"double", DType::F64},
      {"f64", DType::F64},          {"Half", DType::F16},       {"c10::Half", DType::F16},
      {"half", DType::F16},         {"f16", DType::F16},        {"BFloat16", DType::BF16},
      {"c10::BFloat16", DType::BF16}, {"bf16", DType::BF16},    {"bfloat16", DType::BF16},
      {"Int", DType::I32},          {"int", DType::I32},        {"i32", DType::I32},
      {"int32_t", DType::I32},      {"Long", DType::I64},       {"long int", DType::I64},
      {"long", DType::I64},         {"i64", DType::I64},        {"int64_t", DType::I64},
      {"Byte", DType::U8},          {"unsigned char", DType::U8}, {"u8", DType::U8},
      {"uint8_t", DType::U8}};
  for (const auto& [k, v] : table)
    if (name == k) return v;
  return std::nullopt;
}

std::optional<std::vector<std::int64_t>> int_list(std::string_view t) {
  std::size_t i = 0;
  auto ws = [&] {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n')) ++i;
  };
  ws();
  if (i >= t.size() || t[i] != '[') return std::nullopt;
  ++i;
  std::vector<std::int64_t> out;
  ws();
  if (i < t.size() && t[i] == ']') return out;
  while (true) {
    ws();
    bool neg = false;
    if (i < t.size() && t[i] == '-') neg = true, ++i;
    std::size_t start = i;
    std::int64_t x = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])) && i - start < 18)
      x = x * 10 + (t[i++] - '0');
    if (i == start) return std::nullopt;
    out.push_back(neg ? -x : x);
    if (out.size() > (1u << 20)) return std::nullopt;
    ws();
    if (i < t.size() && t[i] == ',') {
      ++i;
      continue;
    }
    if (i < t.size() && t[i] == ']') return out;
    return std::nullopt;
  }
}

}  // namespace trace_detail

bool looks_like_trace(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b)
    return true;
  std::size_t i = 0;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i >= head.size() || head[i] != '{') return false;
  for (const char* k : {"\"traceEvents\"", "\"schemaVersion\"", "\"distributedInfo\"",
                        "\"deviceProperties\""})
    if (head.find(k) != std::string_view::npos) return true;
  return false;
}

ParsedTrace read_trace_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f)
    throw Error(path + ": cannot open the trace (" + std::strerror(errno) +
                "); check the path (shardbench import TRACE.json[.gz]... --out R.jsonl)");
  bool failed = false;
  ParsedTrace t = parse_stream(
      [&](char* b, std::size_t n) -> std::size_t {
        const std::size_t got = std::fread(b, 1, n, f.get());
        if (got == 0 && std::ferror(f.get())) failed = true;
        return got;
      },
      path);
  if (failed) throw Error(path + ": read error");
  return t;
}

ParsedTrace parse_trace_bytes(std::string_view bytes, const std::string& name) {
  std::size_t pos = 0;
  return parse_stream(
      [&](char* b, std::size_t n) -> std::size_t {
        const std::size_t k = std::min(n, bytes.size() - pos);
        std::memcpy(b, bytes.data() + pos, k);
        pos += k;
        return k;
      },
      name);
}

// ---------------------------------------------------------------------------------------------
// Merging.

MergedTraces merge_traces(const std::vector<ParsedTrace>& traces, int ranks_per_host) {
  if (traces.empty()) throw Error("no trace given");
  MergedTraces m;
  // One job: one world size, one NCCL version, ranks once each.
  const ParsedTrace& t0 = traces.front();
  std::map<int, const ParsedTrace*> by_rank;
  for (const ParsedTrace& t : traces) {
    for (const auto& [why, n] : t.skipped) m.skipped[why] += n;
    if (traces.size() > 1 && (!t.rank || !t.world_size))
      throw Error(t.name + ": the trace has no distributedInfo (rank, world_size), so it cannot "
                           "be told apart from the other ranks' traces; import it alone");
    if (t.world_size != t0.world_size)
      throw Error(t.name + ": world_size " + std::to_string(t.world_size.value_or(0)) +
                  " but " + t0.name + " has " + std::to_string(t0.world_size.value_or(0)) +
                  ": traces of different jobs; import each job's traces separately");
    if (t.nccl_version != t0.nccl_version || t.backend != t0.backend)
      throw Error(t.name + ": backend/NCCL version " + t.backend + " " + t.nccl_version +
                  " but " + t0.name + " has " + t0.backend + " " + t0.nccl_version +
                  ": traces of different jobs; import each job's traces separately");
    const int r = t.rank.value_or(0);
    if (auto [it, fresh] = by_rank.try_emplace(r, &t); !fresh)
      throw Error(t.name + ": rank " + std::to_string(r) + " again (also " + it->second->name +
                  "): give each rank's trace once, from one job");
  }
  // The world: distributedInfo's, else (one trace without it) the largest group seen.
  int world = t0.world_size.value_or(0);
  if (world == 0) {
    for (const TraceCall& c : t0.calls) world = std::max(world, c.group_size);
    if (world == 0) world = 1;
    m.notes.push_back(t0.name + ": no distributedInfo: world taken as the largest group (" +
                      std::to_string(world) + "), rank as 0");
  }
  m.world = world;
  for (const ParsedTrace& t : traces) {
    const int r = t.rank.value_or(0);
    if (r >= world)
      throw Error(t.name + ": rank " + std::to_string(r) + " but world_size " +
                  std::to_string(world) + ": the trace contradicts itself");
    auto check_group = [&](const std::vector<int>& ranks, const std::string& what) {
      for (int x : ranks)
        if (x >= world)
          throw Error(t.name + ": " + what + " has rank " + std::to_string(x) +
                      " but world_size is " + std::to_string(world) +
                      ": the world size contradicts the ranks found");
    };
    for (const TracePgConfig& c : t.pg_config) check_group(c.ranks, "pg_config " + c.name);
    for (const TraceCall& c : t.calls) {
      check_group(c.group_ranks, "process group [" + group_text(c.group_ranks) + "]");
      if (t.rank && !std::binary_search(c.group_ranks.begin(), c.group_ranks.end(), r))
        throw Error(t.name + ": rank " + std::to_string(r) + " ran a collective of process group [" +
                    group_text(c.group_ranks) +
                    "], which does not hold it: the trace is inconsistent");
    }
  }
  // Hosts.
  std::vector<int> host_of(std::size_t(world), -1);
  if (ranks_per_host > 0) {
    if (world % ranks_per_host != 0)
      throw Error("--ranks-per-host " + std::to_string(ranks_per_host) + " does not divide the " +
                  "job's world size " + std::to_string(world));
    for (int h = 0; h < world / ranks_per_host; ++h) {
      std::vector<int> rs;
      for (int r = 0; r < ranks_per_host; ++r) rs.push_back(h * ranks_per_host + r);
      m.hosts.emplace_back("host" + std::to_string(h), rs);
      for (int r : rs) host_of[std::size_t(r)] = h;
    }
    m.topology_from = "--ranks-per-host";
  } else {
    bool all = int(by_rank.size()) == world;
    for (const auto& [r, t] : by_rank) all = all && !t->host_name.empty();
    if (!all)
      throw Error(std::string("the traces give the hosts of ") + std::to_string(by_rank.size()) +
                  " of the job's " + std::to_string(world) +
                  " ranks; pass --ranks-per-host N (GPUs per node) to place the others");
    std::map<std::string, int> idx;
    for (const auto& [r, t] : by_rank) {
      auto [it, fresh] = idx.try_emplace(t->host_name, int(m.hosts.size()));
      if (fresh) m.hosts.emplace_back(t->host_name, std::vector<int>{});
      m.hosts[std::size_t(it->second)].second.push_back(r);
      host_of[std::size_t(r)] = it->second;
    }
    m.topology_from = "host_name of every rank's trace";
  }
  // Per process group (ranks, name): each rank's calls in order.
  using GroupKey = std::pair<std::vector<int>, std::string>;
  std::map<GroupKey, std::map<int, std::vector<const TraceCall*>>> groups;
  for (const auto& [r, t] : by_rank)
    for (const TraceCall& c : t->calls) groups[{c.group_ranks, c.pg_name}][r].push_back(&c);
  std::map<std::tuple<int, std::vector<int>, std::string, std::int64_t, int, std::string>,
           std::size_t>
      index;
  for (const auto& [gk, per_rank_all] : groups) {
    const auto& [ranks, pg] = gk;
    // Line up the ranks' calls: by torch's per-group sequence number ("Seq") when every call
    // has one (the calls on every given rank are merged; those some rank's window missed are
    // dropped and counted); without it, in order, and only when every rank holds as many calls
    // (a window that starts or ends a step later on one rank would pair different calls).
    bool seqs = true;
    std::size_t ncalls = std::numeric_limits<std::size_t>::max(), most = 0;
    for (const auto& [r, calls] : per_rank_all) {
      ncalls = std::min(ncalls, calls.size());
      most = std::max(most, calls.size());
      for (const TraceCall* c : calls) seqs = seqs && c->seq >= 0;
    }
    std::map<int, std::vector<const TraceCall*>> aligned;
    if (seqs) {
      // (Seq, its k-th call on the rank): calls sharing a Seq (a coalesced group) in order.
      std::map<std::pair<std::int64_t, int>, std::map<int, const TraceCall*>> by_seq;
      for (const auto& [r, calls] : per_rank_all) {
        std::map<std::int64_t, int> seen;
        for (const TraceCall* c : calls) by_seq[{c->seq, seen[c->seq]++}].emplace(r, c);
      }
      std::size_t dropped = 0;
      for (const auto& [q, on] : by_seq) {
        if (on.size() != per_rank_all.size()) {
          ++dropped;
          continue;
        }
        for (const auto& [r, c] : on) aligned[r].push_back(c);
      }
      if (dropped > 0)
        m.notes.push_back("process group [" + group_text(ranks) + "]: " +
                          std::to_string(dropped) +
                          " call(s) not in every given rank's trace (profiling windows differ) "
                          "left out; the others matched by their Seq");
      if (aligned.empty()) continue;
      ncalls = aligned.begin()->second.size();
    } else {
      if (most != ncalls) {
        std::string counts;
        for (const auto& [r, calls] : per_rank_all)
          counts += (counts.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) +
                    ": " + std::to_string(calls.size());
        throw Error("process group [" + group_text(ranks) + "]: the ranks' traces hold " +
                    "different numbers of calls (" + counts + ") and no Seq numbers to match "
                    "them by; profile the same steps on every rank (one torch.profiler "
                    "schedule), or import the ranks' traces separately");
      }
      aligned = per_rank_all;
    }
    const auto& per_rank = aligned;
    const int n = int(ranks.size());
    std::map<int, int> per_host;
    for (int r : ranks) ++per_host[host_of[std::size_t(r)]];
    int hosts = int(per_host.size()), maxr = 0;
    for (const auto& [h, c] : per_host) maxr = std::max(maxr, c);
    for (std::size_t k = 0; k < ncalls; ++k) {
      const TraceCall* first = per_rank.begin()->second[k];
      double best = first->dur_us;
      for (const auto& [r, calls] : per_rank) {
        const TraceCall* c = calls[k];
        if (c->collective != first->collective || c->bytes != first->bytes ||
            c->dtype != first->dtype || c->redop != first->redop)
          throw Error("process group [" + group_text(ranks) + "] call " + std::to_string(k + 1) +
                      " is " + std::string(collective_info(first->collective).name) + " " +
                      std::to_string(first->bytes) + " B " +
                      std::string(dtype_name(first->dtype)) + " on rank " +
                      std::to_string(per_rank.begin()->first) + " but " +
                      std::string(collective_info(c->collective).name) + " " +
                      std::to_string(c->bytes) + " B " + std::string(dtype_name(c->dtype)) +
                      " on rank " + std::to_string(r) +
                      ": traces of different jobs or steps; give traces of one profiled window");
        best = std::min(best, c->dur_us);
      }
      const auto key = std::make_tuple(int(first->collective), ranks, pg, first->bytes,
                                       int(first->dtype), first->redop);
      auto [it, fresh] = index.try_emplace(key, m.points.size());
      if (fresh) {
        TracePoint p;
        p.collective = first->collective;
        p.dtype = first->dtype;
        p.bytes = first->bytes;
        p.group_ranks = ranks;
        p.pg_name = pg;
        p.pg_desc = first->pg_desc;
        p.redop = first->redop;
        p.group_size = n;
        p.groups = world % n == 0 ? world / n : 1;
        p.hosts_spanned = hosts;
        p.max_ranks_per_host = maxr;
        p.ranks_merged = int(per_rank.size());
        m.points.push_back(std::move(p));
      }
      TracePoint& p = m.points[it->second];
      p.samples_s.push_back(best * 1e-6);
      for (const auto& [r, calls] : per_rank) {
        const TraceCall* c = calls[k];
        if (std::find(p.sizes_from.begin(), p.sizes_from.end(), c->sizes_from) == p.sizes_from.end())
          p.sizes_from.push_back(c->sizes_from);
        if (std::find(p.torch_names.begin(), p.torch_names.end(), c->torch_name) == p.torch_names.end())
          p.torch_names.push_back(c->torch_name);
      }
      ++m.calls;
    }
  }
  return m;
}

}  // namespace shardcal::formats
