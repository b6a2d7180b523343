// `shardbench import`: format detection and what the parsers share (docs/IMPORT.md).
#include "shardcal/formats/import_logs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

#include "import_text.hpp"
#include "shardcal/error.hpp"

namespace shardcal::formats {

std::string_view log_format_name(LogFormat f) {
  switch (f) {
    case LogFormat::Auto: return "auto";
    case LogFormat::NcclTests: return "nccl-tests";
    case LogFormat::NcclTestsJson: return "nccl-tests-json";
    case LogFormat::Osu: return "osu";
  }
  return "auto";
}

LogFormat parse_log_format(std::string_view text) {
  for (LogFormat f :
       {LogFormat::Auto, LogFormat::NcclTests, LogFormat::NcclTestsJson, LogFormat::Osu})
    if (text == log_format_name(f)) return f;
  throw Error("unknown log format \"" + std::string(text) +
              "\"; expected auto, nccl-tests, nccl-tests-json or osu");
}

LogFormat detect_log_format(std::string_view text, const std::string& name) {
  using namespace import_detail;
  // JSON: the first non-blank character opens an object.
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return LogFormat::NcclTestsJson;
  bool nccl = false, osu = false;
  for_each_line(text, [&](int, std::string_view raw) {
    const std::string_view line = trim(strip_launcher_tags(raw));
    if (line.empty() || line[0] != '#') return;
    const std::string_view body = trim(line.substr(1));
    if (starts_with(body, "OSU ")) osu = true;
    if (starts_with(body, "nccl-tests version") || starts_with(body, "nThread ") ||
        starts_with(body, "Collective test starting"))
      nccl = true;
    const auto t = split_ws(body);
    if (t.size() > 4 && t[0] == "size" && t[1] == "count") nccl = true;
  });
  if (nccl && !osu) return LogFormat::NcclTests;
  if (osu && !nccl) return LogFormat::Osu;
  if (nccl && osu)
    throw Error(name +
                ":1: the log holds both nccl-tests and OSU output; split it into one file "
                "per benchmark run");
  throw Error(name +
              ":1: not a benchmark log shardbench can import (no nccl-tests header `# nThread ...` "
              "or table header `#  size  count  type ...`, no OSU title `# OSU MPI ... Test`, not "
              "nccl-tests JSON); import nccl-tests output (text or -J JSON) or an OSU collective "
              "benchmark's output, or name the format with --format");
}

namespace {

std::string options_of(const std::vector<Collective>& cs) {
  std::string out;
  for (Collective c : cs)
    out += (out.empty() ? "--collective " : " or --collective ") + std::string(collective_info(c).name);
  return out;
}

std::string names_of(const std::vector<Collective>& cs, const char* conj) {
  std::string out;
  for (std::size_t i = 0; i < cs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == cs.size() ? std::string(" ") + conj + " " : ", ") +
           std::string(collective_info(cs[i]).name);
  return out;
}

// The group size the table's busbw was computed on: ranks per colour of the rank lines, else
// the hint (--hosts x --ranks-per-host).
int table_group_size(const ParsedLog& log, int hint) {
  if (log.ranks.empty()) return hint;
  std::map<int, int> n;
  for (const LogRank& r : log.ranks) ++n[r.group];
  return int(log.ranks.size() / n.size());
}

// What the rows of an nccl-tests table say about the collective that printed them.
struct TableSignature {
  const LogRow* row = nullptr;  // the row read (the largest algbw: the most digits)
  int world = 0;                // 0: unknown
  double ratio = 0;             // busbw / algbw; 0 when no row prints a bandwidth
  bool reduces = false, whole = false, per_rank = false, rooted = false;
  std::string text;
};

TableSignature signature_of(const ParsedLog& log, int world) {
  TableSignature sig;
  sig.world = world;
  for (const LogRow& r : log.rows)
    if (r.algbw_GBps > 0 && r.count >= 0 && (!sig.row || r.algbw_GBps > sig.row->algbw_GBps))
      sig.row = &r;
  if (!sig.row)
    for (const LogRow& r : log.rows)
      if (r.count > 0 && (!sig.row || r.size > sig.row->size)) sig.row = &r;
  if (!sig.row) return sig;
  const LogRow& r = *sig.row;
  if (r.algbw_GBps > 0) sig.ratio = r.busbw_GBps / r.algbw_GBps;
  sig.reduces = r.redop != "none";
  sig.rooted = r.root && *r.root >= 0;
  const std::int64_t es = std::int64_t(dtype_size(r.dtype));
  sig.whole = r.count * es == r.size;
  sig.per_rank = world >= 2 ? r.count * es * world == r.size : (r.count * es < r.size);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", sig.ratio);
  sig.text = "redop " + r.redop + ", count x " + std::to_string(es) + " B " +
             (sig.whole ? "= size" : sig.per_rank ? "= size / ranks" : "!= size or size / ranks") +
             (r.root ? ", root " + std::to_string(*r.root) : std::string()) +
             (sig.ratio > 0 ? ", busbw/algbw " + std::string(ratio) +
                                  (world >= 2 ? " on " + std::to_string(world) + " ranks"
                                              : std::string(" (rank count unknown)"))
                            : std::string(", no bandwidth printed")) +
             (r.line > 0 ? " (line " + std::to_string(r.line) + ")" : " (" + r.pointer + ")");
  return sig;
}

bool near_factor(double ratio, double f) { return std::abs(ratio - f) <= 0.02 * f + 0.01; }

// Why `c` cannot have printed a table of this signature ("" when it can).
std::string misfit(Collective c, const TableSignature& sig) {
  const auto& info = collective_info(c);
  const bool whole_rule = c == Collective::AllReduce || c == Collective::Broadcast;
  if (info.reduces != sig.reduces)
    return info.reduces ? "it reduces (redop sum, ...), the table's redop is none"
                        : "it does not reduce, the table's redop is " + sig.row->redop;
  if (whole_rule && !sig.whole) return "its count column is size / element size";
  if (!whole_rule && !sig.per_rank) return "its count column is size / (ranks x element size)";
  if (info.has_root && sig.row->root && !sig.rooted) return "it has a root, the table's is -1";
  if (!info.has_root && sig.rooted) return "it has no root, the table's root is a rank";
  if (sig.ratio > 0 && sig.world >= 2 && !near_factor(sig.ratio, info.busbw_factor(sig.world))) {
    char f[32];
    std::snprintf(f, sizeof f, "%.3f", info.busbw_factor(sig.world));
    return "its busbw/algbw on " + std::to_string(sig.world) + " ranks is " + f;
  }
  return "";
}

}  // namespace

namespace import_detail {

void fail(const std::string& name, int line, const std::string& what) {
  throw Error(name + ":" + std::to_string(line) + ": " + what);
}

bool TableRows::accept(int line, std::size_t fields, bool fits, std::size_t header_fields,
                       int header_line) {
  ++rows_;
  if (pending_line_)
    fail(name_, pending_line_,
         pending_what_ +
             ", and more rows follow it; repair or delete that line (only a log's last row may "
             "be cut short)");
  if (fits) return true;
  pending_line_ = line;
  pending_what_ = "the row has " + std::to_string(fields) + " fields where the " + header_ +
                  " (line " + std::to_string(header_line) + ") has " +
                  std::to_string(header_fields);
  return false;
}

void TableRows::finish(ParsedLog& log, int header_line) const {
  if (pending_line_) {
    ++log.skipped_truncated;
    log.notes.push_back(name_ + ":" + std::to_string(pending_line_) + ": " + pending_what_ +
                        ": the last row is cut short; skipped");
  }
  if (rows_ == 0)
    fail(name_, header_line,
         "the table has no rows (did the run stop before its first size?); nothing to import");
}

void infer_from_table(ParsedLog& log, int world) {
  log.collective.reset();
  log.candidates.clear();
  log.undetermined = true;
  const TableSignature sig = signature_of(log, world);
  if (!sig.row) {
    log.benchmark_from = "no program name in the log, and no row with a count to infer it from";
    return;
  }
  log.evidence = sig.text;
  std::vector<Collective> fits;
  for (const auto& info : kCollectives)
    if (misfit(info.op, sig).empty()) fits.push_back(info.op);
  // Without the rank count the busbw factor cannot be read: never guess then. sendrecv (sum,
  // count = size, factor 1) looks like all_reduce on 2 ranks: that stays ambiguous too.
  const bool sendrecv_like = sig.reduces && sig.whole && sig.world == 2 && near_factor(sig.ratio, 1.0);
  if (fits.size() == 1 && sig.world >= 2 && sig.ratio > 0 && !sendrecv_like) {
    log.collective = fits.front();
    log.undetermined = false;
    log.benchmark = std::string(collective_info(fits.front()).name) + " (inferred)";
    log.benchmark_from = "inferred from the table: " + sig.text;
    return;
  }
  log.candidates = fits;
  log.sendrecv_lookalike = sendrecv_like;
  std::string what;
  if (sig.world < 2)
    what = "the rank count is unknown (no `#  Rank` lines), so the busbw/algbw ratio cannot be "
           "read";
  else if (sig.ratio <= 0)
    what = "no row prints a bandwidth to read";
  else if (fits.empty())
    what = "it fits no collective of shardcal's table";
  else
    what = "it fits " + names_of(fits, "and") + (sendrecv_like ? " (and sendrecv_perf)" : "");
  log.benchmark_from = "no program name (`# Collective test starting: X_perf` or the command) in "
                       "the log; the table (" + sig.text + "): " + what;
}

}  // namespace import_detail

ParsedLog parse_log(std::string_view text, const std::string& name, LogFormat format,
                    std::optional<Collective> collective, int group_size_hint) {
  if (format == LogFormat::Auto) format = detect_log_format(text, name);
  ParsedLog log;
  switch (format) {
    case LogFormat::NcclTests: log = parse_nccl_tests_text(text, name); break;
    case LogFormat::NcclTestsJson: log = parse_nccl_tests_json(text, name); break;
    case LogFormat::Osu: log = parse_osu(text, name); break;
    case LogFormat::Auto: break;
  }
  const bool nccl = log.format != LogFormat::Osu;
  // The rank count from --hosts x --ranks-per-host reads a table the rank lines did not.
  if (nccl && log.undetermined && log.ranks.empty() && group_size_hint >= 2)
    import_detail::infer_from_table(log, group_size_hint);
  if (collective) {
    const std::string given = std::string(collective_info(*collective).name);
    if (log.collective && *log.collective != *collective)
      throw Error(name + ": the log measures " +
                  std::string(collective_info(*log.collective).name) + " (" + log.benchmark_from +
                  ") but --collective says " + given +
                  "; drop --collective or import this log separately");
    if (!log.collective && !log.skip_reason.empty() && !log.benchmark.empty())
      throw Error(name + ": " + log.benchmark + " is not " + given + " (" + log.skip_reason +
                  "); drop --collective or import this log separately");
    if (!log.collective && nccl) {
      // The table is evidence: a collective it contradicts would file wrong bytes and busbw.
      const TableSignature sig = signature_of(log, table_group_size(log, group_size_hint));
      if (sig.row) {
        const std::string why = misfit(*collective, sig);
        if (!why.empty())
          throw Error(name + ": --collective " + given + " contradicts the table (" + sig.text +
                      "): " + why +
                      (log.candidates.empty()
                           ? std::string("; check the log and the collective it ran")
                           : "; it fits " + names_of(log.candidates, "or") + ": pass " + options_of(log.candidates)) +
                      " (nothing written)");
      }
    }
    if (!log.collective) {
      log.collective = collective;
      log.benchmark_from = "--collective " + given + (log.evidence.empty() ? "" : "; the table: " + log.evidence);
      log.skip_reason.clear();
      log.undetermined = false;
      if (log.benchmark.empty()) log.benchmark = "an unnamed " + log.tool + " table";
    }
  }
  // Not an error: with several logs the others still import; alone, nothing is left (exit 2).
  if (!log.collective && log.skip_reason.empty()) {
    log.undetermined = true;
    log.skip_reason =
        "cannot tell which collective it measured (" + log.benchmark_from + "); " +
        (log.candidates.empty()
             ? std::string("pass --collective NAME (all_reduce, all_gather, reduce_scatter, "
                           "all_to_all, broadcast, scatter, gather; nccl-tests' and OSU's names "
                           "work too)")
             : "pass " + options_of(log.candidates)) +
        " to import it" +
        (log.sendrecv_lookalike
             ? " if it is all_reduce_perf's; a sendrecv_perf log is point-to-point and cannot be "
               "imported (shardcal's collective table has no send/recv entry)"
             : "");
  }
  return log;
}

std::int64_t table_bytes(const ParsedLog& log, const LogRow& row, int world) {
  if (log.format != LogFormat::Osu || !log.collective) return row.size;
  // OSU prints the block one rank sends (all_gather, all_to_all to each peer, scatter/gather per
  // rank); the table's S is n such blocks.
  switch (*log.collective) {
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return row.size * std::int64_t(world);
    default: return row.size;
  }
}

namespace import_detail {

std::string_view strip_launcher_tags(std::string_view line) {
  // srun --label: "12: " (digits, colon, blank). No table row or header starts like that.
  std::size_t digits = 0;
  while (digits < line.size() && digits < 9 && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits > 0 && digits + 1 < line.size() && line[digits] == ':' &&
      (line[digits + 1] == ' ' || line[digits + 1] == '\t'))
    line = line.substr(digits + 2);
  for (int pass = 0; pass < 2; ++pass) {
    if (line.empty() || line[0] != '[') break;
    const std::size_t close = line.find(']');
    if (close == std::string_view::npos) break;
    const std::string_view tag = line.substr(1, close - 1);
    std::size_t skip = close + 1;
    if (tag.find_first_of(" \t") != std::string_view::npos) break;
    // Open MPI --tag-output: [job,rank]<stdout>:
    const bool ompi =
        tag.find(',') != std::string_view::npos && line.substr(skip).substr(0, 8) == "<stdout>";
    const bool ompi_err =
        tag.find(',') != std::string_view::npos && line.substr(skip).substr(0, 8) == "<stderr>";
    if (ompi || ompi_err) {
      skip += 8;
      if (skip < line.size() && line[skip] == ':') ++skip;
    } else if (!tag.empty() && tag.find_first_not_of("0123456789") == std::string_view::npos) {
      // MPICH/Hydra -prepend-rank: "[3] "
    } else if (std::count(tag.begin(), tag.end(), ':') != 1) {
      break;  // [host:pid] has one colon; "[0000:29:00]" (a bus id) or "[x]" is not a tag
    }
    line = line.substr(std::min(skip, line.size()));
  }
  return line;
}

std::optional<DType> nccl_type(std::string_view name) {
  if (name == "float" || name == "float32") return DType::F32;
  if (name == "double" || name == "float64") return DType::F64;
  if (name == "half" || name == "float16") return DType::F16;
  if (name == "bfloat16") return DType::BF16;
  if (name == "int32" || name == "int") return DType::I32;
  if (name == "int64") return DType::I64;
  if (name == "uint8") return DType::U8;
  return std::nullopt;
}

std::optional<Collective> nccl_program(std::string_view program, std::string& why) {
  const std::size_t slash = program.find_last_of('/');
  if (slash != std::string_view::npos) program = program.substr(slash + 1);
  if (program == "all_reduce_perf") return Collective::AllReduce;
  if (program == "all_gather_perf") return Collective::AllGather;
  if (program == "reduce_scatter_perf") return Collective::ReduceScatter;
  if (program == "alltoall_perf") return Collective::AllToAll;
  if (program == "broadcast_perf") return Collective::Broadcast;
  if (program == "scatter_perf") return Collective::Scatter;
  if (program == "gather_perf") return Collective::Gather;
  if (program == "sendrecv_perf")
    why = "sendrecv_perf is point-to-point: shardcal's collective table has no send/recv entry";
  else if (program == "reduce_perf")
    why = "reduce_perf measures reduce, which shardcal's collective table does not have";
  else
    why = std::string(program) +
          " is not one of the collectives in shardcal's table "
          "(all_reduce, all_gather, reduce_scatter, alltoall, broadcast, scatter, gather)";
  return std::nullopt;
}

namespace {

std::optional<int> positive(std::string_view t) {
  const auto v = to_int(t);
  if (!v || *v < 1 || *v > (1 << 24)) return std::nullopt;
  return int(*v);
}

// "a,b:4,c" -> names (and slots when every entry has them).
void add_host_list(std::string_view list, LaunchShape& s, std::map<std::string, int>& slots) {
  std::size_t i = 0;
  while (i <= list.size()) {
    const std::size_t j = std::min(list.find(',', i), list.size());
    std::string_view h = list.substr(i, j - i);
    std::optional<int> n;
    if (const std::size_t c = h.find(':'); c != std::string_view::npos) {
      n = positive(h.substr(c + 1));
      h = h.substr(0, c);
    }
    if (!h.empty() && h.find_first_of("[]*=/") == std::string_view::npos) {
      if (!slots.count(std::string(h))) s.host_names.emplace_back(h);
      slots[std::string(h)] += n.value_or(0);
    }
    i = j + 1;
  }
}

}  // namespace

std::optional<LaunchShape> parse_launch_line(std::string_view line, int line_no) {
  const auto t = split_ws(line);
  std::size_t k = 0;
  std::string launcher;
  for (; k < t.size(); ++k) {
    std::string_view b = t[k];
    if (const std::size_t slash = b.find_last_of('/'); slash != std::string_view::npos)
      b = b.substr(slash + 1);
    if (b == "srun" || b == "mpirun" || b == "mpiexec" || b == "mpiexec.hydra" ||
        b == "mpirun_rsh" || b == "orterun" || b == "prterun" || b == "aprun" ||
        b == "mpirun.openmpi" || b == "mpiexec.mpich" || b == "mpirun.mpich") {
      launcher = std::string(b);
      break;
    }
  }
  if (launcher.empty()) return std::nullopt;
  LaunchShape s;
  s.line = line_no;
  s.launcher = launcher;
  s.text = std::string(trim(line));
  const bool slurm = launcher == "srun";
  const bool rsh = launcher == "mpirun_rsh";
  std::map<std::string, int> slots;
  std::vector<std::string> rsh_hosts;
  bool rsh_open = false;
  // The value of an option: "--opt=V", "--opt V", "-N2" (short options glued).
  auto value = [&](std::size_t& i, std::string_view opt) -> std::optional<std::string_view> {
    const std::string_view a = t[i];
    if (a == opt) {
      if (i + 1 < t.size()) return t[++i];
      return std::nullopt;
    }
    if (opt.size() > 2 && a.size() > opt.size() && starts_with(a, opt) && a[opt.size()] == '=')
      return a.substr(opt.size() + 1);
    // Glued short options take digits only: "-N2", "-n8" (not "-npernode").
    if (opt.size() == 2 && a.size() > 2 && starts_with(a, opt) && opt[1] != '-' &&
        is_uint_token(a.substr(2)))
      return a.substr(2);
    return std::nullopt;
  };
  // Two options of one line that state different hosts or ranks per host (`-ppn 4 --map-by
  // ppr:2:node`, `--ntasks-per-node=4 --tasks-per-node=8`): the line contradicts itself.
  std::string clash;
  auto set_shape = [&](std::optional<int>& field, std::optional<int> v, std::string_view opt,
                       std::string& field_opt, const char* what) {
    if (field && v && *field != *v && clash.empty())
      clash = field_opt + " gives " + std::to_string(*field) + " " + what + " but " +
              std::string(opt.substr(0, opt.find('='))) + " gives " + std::to_string(*v);
    field = v;
    field_opt = std::string(opt.substr(0, opt.find('=')));
  };
  std::string hosts_opt, rph_opt;
  auto set_hosts = [&](std::optional<int> v, std::string_view opt) {
    set_shape(s.hosts, v, opt, hosts_opt, "host(s)");
  };
  auto set_rph = [&](std::optional<int> v, std::string_view opt) {
    set_shape(s.ranks_per_host, v, opt, rph_opt, "rank(s) per host");
  };
  for (std::size_t i = k + 1; i < t.size(); ++i) {
    const std::string_view a = t[i];
    // The program ends the launcher's options.
    if (a.find("osu_") != std::string_view::npos || a.find("_perf") != std::string_view::npos) {
      std::string_view b = a;
      while (!b.empty() && (b.back() == '"' || b.back() == '\'' || b.back() == ';')) b.remove_suffix(1);
      if (const std::size_t slash = b.find_last_of('/'); slash != std::string_view::npos)
        b = b.substr(slash + 1);
      while (!b.empty() && (b.front() == '"' || b.front() == '\'')) b.remove_prefix(1);
      if (starts_with(b, "osu_") ||
          (b.size() > 5 && b.substr(b.size() - 5) == "_perf"))
        s.program = std::string(b);
      break;
    }
    std::optional<std::string_view> v;
    if (slurm) {
      if ((v = value(i, "-N")) || (v = value(i, "--nodes"))) set_hosts(positive(*v), a);
      // --tasks-per-node: Slurm's alias of --ntasks-per-node.
      else if ((v = value(i, "--ntasks-per-node")) || (v = value(i, "--tasks-per-node")))
        set_rph(positive(*v), a);
      else if ((v = value(i, "-n")) || (v = value(i, "--ntasks"))) s.ranks = positive(*v);
      else if ((v = value(i, "-w")) || (v = value(i, "--nodelist"))) add_host_list(*v, s, slots);
      continue;
    }
    if (launcher == "aprun") {
      if ((v = value(i, "-n"))) s.ranks = positive(*v);
      else if ((v = value(i, "-N")))
        set_rph(positive(*v), a);
      continue;
    }
    if ((v = value(i, "-np")) || (v = value(i, "--np")) || (v = value(i, "-n"))) {
      s.ranks = positive(*v);
      rsh_open = rsh;
      continue;
    }
    if (rsh_open && !a.empty() && a[0] != '-' && a.find('=') == std::string_view::npos &&
        a.find('/') == std::string_view::npos) {
      rsh_hosts.emplace_back(a);  // mpirun_rsh -np 2 host1 host2 ...: one host per rank
      continue;
    }
    rsh_open = false;
    // Open MPI -npernode/-N, MPICH Hydra and Intel MPI -ppn/-perhost.
    if ((v = value(i, "-npernode")) || (v = value(i, "--npernode")) || (v = value(i, "-ppn")) ||
        (v = value(i, "--ppn")) || (v = value(i, "-perhost")) || (v = value(i, "--perhost")) ||
        (v = value(i, "-N")))
      set_rph(positive(*v), a);
    else if ((v = value(i, "--map-by")) || (v = value(i, "-map-by"))) {
      // Open MPI ppr:4:node, with modifiers after it (ppr:4:node:PE=2, ppr:4:node,oversubscribe);
      // other mappings (by slot, socket, ...) say nothing of ranks per host.
      const std::string_view m = *v;
      if (starts_with(m, "ppr:")) {
        const std::size_t c = m.find(':', 4);
        const std::string_view rest = c == std::string_view::npos ? "" : m.substr(c + 1);
        if (rest == "node" || starts_with(rest, "node:") || starts_with(rest, "node,"))
          set_rph(positive(m.substr(4, c - 4)), a);
      }
    } else if ((v = value(i, "-H")) || (v = value(i, "--host")) || (v = value(i, "-host")) ||
               (v = value(i, "-hosts")) || (v = value(i, "--hosts")))
      add_host_list(*v, s, slots);
  }
  if (!clash.empty()) {
    // Neither value is evidence; a stated rank count (-np, -n, --ntasks) still is.
    s.inconsistent = "its options disagree: " + clash + "; " +
                     (s.ranks ? "only the rank count is used" : "neither is used");
    s.hosts.reset();
    s.ranks_per_host.reset();
    s.host_names.clear();
    slots.clear();
    rsh_hosts.clear();
  }
  for (const std::string& h : rsh_hosts) {
    if (!slots.count(h)) s.host_names.push_back(h);
    ++slots[h];
  }
  if (!s.host_names.empty()) {
    if (!s.hosts) s.hosts = int(s.host_names.size());
    bool all = true;
    std::optional<int> same;
    for (const std::string& h : s.host_names) {
      all = all && slots[h] > 0;
      if (!same) same = slots[h];
      else if (*same != slots[h]) all = false;
    }
    if (all && same && !s.ranks_per_host) s.ranks_per_host = *same;
  }
  // A stated rank count (-np, -n, --ntasks) wins: hosts and ranks per host from the other options
  // (-H's list and slots, -N, --ntasks-per-node) that do not multiply to it (slots are capacity,
  // a host list is where ranks may go) are not evidence of the shape: dropped, with the names.
  if (s.ranks) {
    const std::int64_t n = *s.ranks;
    std::string why;
    if (s.hosts && s.ranks_per_host && std::int64_t(*s.hosts) * *s.ranks_per_host != n)
      why = std::to_string(*s.hosts) + " host(s) x " + std::to_string(*s.ranks_per_host) +
            " rank(s) per host = " +
            std::to_string(std::int64_t(*s.hosts) * *s.ranks_per_host) + " ranks";
    else if (s.hosts && (*s.hosts > n || n % *s.hosts != 0))
      why = std::to_string(*s.hosts) + " host(s) (not a divisor of the rank count)";
    else if (s.ranks_per_host && (*s.ranks_per_host > n || n % *s.ranks_per_host != 0))
      why = std::to_string(*s.ranks_per_host) +
            " rank(s) per host (not a divisor of the rank count)";
    if (!why.empty()) {
      s.inconsistent = "it states " + std::to_string(n) + " ranks but its other options give " +
                       why + "; only the rank count is used";
      s.hosts.reset();
      s.ranks_per_host.reset();
      s.host_names.clear();
    }
  }
  // Products in 64 bits: a shape over kMaxImportRanks is refused by the callers (ranks unset).
  if (s.hosts && s.ranks_per_host && !s.ranks &&
      std::int64_t(*s.hosts) * *s.ranks_per_host <= kMaxImportRanks)
    s.ranks = *s.hosts * *s.ranks_per_host;
  if (s.hosts && s.ranks && !s.ranks_per_host && *s.ranks % *s.hosts == 0)
    s.ranks_per_host = *s.ranks / *s.hosts;
  if (s.ranks_per_host && s.ranks && !s.hosts && *s.ranks % *s.ranks_per_host == 0)
    s.hosts = *s.ranks / *s.ranks_per_host;
  if (!s.hosts && !s.ranks && !s.ranks_per_host) return std::nullopt;
  return s;
}

namespace {

// A date line: `utc` set when its zone converts, else `local` ("YYYY-MM-DDTHH:MM:SS" as written)
// and `zone` (the zone's name, "" when none).
struct DateParse {
  std::optional<std::string> utc;
  std::string local, zone;
};

std::optional<DateParse> parse_date_line(std::string_view line) {
  line = trim(line);
  if (line.size() < 19 || line.size() > 40) return std::nullopt;
  DateParse out_date;
  std::tm tm{};
  long offset_s = 0;
  static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  auto two = [](std::string_view d, int& out) {
    if (d.size() != 2 || d[0] < '0' || d[0] > '9' || d[1] < '0' || d[1] > '9') return false;
    out = (d[0] - '0') * 10 + (d[1] - '0');
    return true;
  };
  auto clock = [&](std::string_view c) {
    return c.size() == 8 && c[2] == ':' && c[5] == ':' && two(c.substr(0, 2), tm.tm_hour) &&
           two(c.substr(3, 2), tm.tm_min) && two(c.substr(6, 2), tm.tm_sec);
  };
  bool unconverted = false;
  const auto t = split_ws(line);
  if (t.size() == 6 || t.size() == 5) {
    // date(1): "Thu Mar  5 22:00:43 UTC 2026" (zone names other than UTC/GMT: not converted)
    static const char* days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    if (std::find_if(std::begin(days), std::end(days), [&](const char* d) { return t[0] == d; }) ==
        std::end(days))
      return std::nullopt;
    const auto m = std::find_if(std::begin(months), std::end(months),
                                [&](const char* x) { return t[1] == x; });
    if (m == std::end(months)) return std::nullopt;
    tm.tm_mon = int(m - std::begin(months));
    const auto day = to_int(t[2]);
    if (!day || *day < 1 || *day > 31 || !clock(t[3])) return std::nullopt;
    tm.tm_mday = int(*day);
    // No zone (local time of an unknown machine) or a zone name other than UTC/GMT (CET: whose
    // rules?): a date, not converted.
    const auto year = to_int(t.size() == 6 ? t[5] : t[4]);
    if (!year || *year < 1990 || *year > 9999) return std::nullopt;
    tm.tm_year = int(*year) - 1900;
    if (t.size() == 5 || (t[4] != "UTC" && t[4] != "GMT")) {
      if (t.size() == 6) {
        for (char c : t[4])
          if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return std::nullopt;
        out_date.zone = std::string(t[4]);
      }
      unconverted = true;
    }
  } else {
    // ISO 8601: "2026-03-05T22:00:43Z", "2026-03-05 22:00:43+01:00", fraction allowed
    std::string_view d = line;
    int y1 = 0, y2 = 0;
    if (d.size() < 19 || !two(d.substr(0, 2), y1) || !two(d.substr(2, 2), y2) || d[4] != '-' ||
        d[7] != '-' || !(d[10] == 'T' || d[10] == ' ') || !two(d.substr(5, 2), tm.tm_mon) ||
        !two(d.substr(8, 2), tm.tm_mday) || !clock(d.substr(11, 8)))
      return std::nullopt;
    tm.tm_year = y1 * 100 + y2 - 1900;
    tm.tm_mon -= 1;
    std::string_view z = d.substr(19);
    if (!z.empty() && z[0] == '.') {
      std::size_t e = 1;
      while (e < z.size() && z[e] >= '0' && z[e] <= '9') ++e;
      z = z.substr(e);
    }
    int oh = 0, om = 0;
    if (z == "Z" || z == " UTC" || z == "+00:00") {
    } else if (z.size() == 6 && (z[0] == '+' || z[0] == '-') && z[3] == ':' &&
               two(z.substr(1, 2), oh) && two(z.substr(4, 2), om)) {
      offset_s = (z[0] == '+' ? 1 : -1) * long(oh * 3600 + om * 60);
    } else if (z.empty()) {
      unconverted = true;  // no zone: whose clock?
    } else {
      return std::nullopt;
    }
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
      return std::nullopt;
  }
  if (tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) return std::nullopt;
  char buf[32];
  if (unconverted) {
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    out_date.local = buf;
    return out_date;
  }
  const std::time_t when = timegm(&tm) - offset_s;
  std::tm out{};
  if (!gmtime_r(&when, &out)) return std::nullopt;
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &out);
  out_date.utc = std::string(buf);
  return out_date;
}

}  // namespace

std::optional<std::string> date_line_utc(std::string_view line) {
  const auto d = parse_date_line(line);
  if (!d) return std::nullopt;
  return d->utc;
}

std::optional<UnconvertedDate> date_line_unconverted(std::string_view line) {
  const auto d = parse_date_line(line);
  if (!d || d->utc) return std::nullopt;
  return UnconvertedDate{d->local, d->zone};
}

void consider_date_line(ParsedLog& log, std::string_view line, int line_no) {
  if (!log.run_date.empty()) return;
  const auto d = parse_date_line(line);
  if (!d) return;
  const std::string where = "line " + std::to_string(line_no) + " (`" + std::string(trim(line)) + "`)";
  if (d->utc) {
    log.run_date = *d->utc;
    log.run_date_from = where;
    return;
  }
  // A text log's bare date without a convertible zone is not used (whose clock?); said.
  if (log.run_date_ignored.empty())
    log.run_date_ignored =
        where + (d->zone.empty() ? std::string(" states no time zone")
                                 : " names the zone " + d->zone + ", which shardbench does not "
                                   "convert (only UTC/GMT or a numeric offset)") +
        "; not used";
}

void consider_launch_line(ParsedLog& log, std::string_view line, int line_no,
                          const std::string& name) {
  std::optional<LaunchShape> s = parse_launch_line(line, line_no);
  if (!s || s->program.empty()) return;  // not the benchmark's launch (nvidia-smi, a script)
  std::int64_t world = s->ranks ? *s->ranks : 0;
  if (s->hosts && s->ranks_per_host)
    world = std::max(world, std::int64_t(*s->hosts) * *s->ranks_per_host);
  if (world > kMaxImportRanks)
    throw Error(name + ":" + std::to_string(line_no) + ": the launch line (`" +
                std::string(trim(line)).substr(0, 120) + "`) states " + s->describe() + " = " +
                std::to_string(world) + " ranks, more than the " + std::to_string(kMaxImportRanks) +
                " shardbench import handles; check the line (nothing written)");
  if (!log.launch) {
    log.launch = std::move(s);
    return;
  }
  const LaunchShape& a = *log.launch;
  if (a.hosts == s->hosts && a.ranks == s->ranks && a.ranks_per_host == s->ranks_per_host) return;
  if (log.launch_ignored.empty())
    log.launch_ignored = "lines " + std::to_string(a.line) + " (`" + a.text + "`: " +
                         a.describe() + ") and " + std::to_string(line_no) + " (`" + s->text +
                         "`: " + s->describe() +
                         ") launch the benchmark with different shapes; neither is used";
}

void finish_launch(ParsedLog& log, const std::string& name) {
  if (!log.launch_ignored.empty()) {
    log.notes.push_back(name + ": " + log.launch_ignored);
    log.launch.reset();
    return;
  }
  if (log.launch && !log.launch->inconsistent.empty())
    log.notes.push_back(name + ":" + std::to_string(log.launch->line) + ": the launch line (`" +
                        log.launch->text + "`) contradicts itself: " + log.launch->inconsistent);
}

}  // namespace import_detail

std::string LaunchShape::describe() const {
  std::string out;
  if (hosts) out += std::to_string(*hosts) + " host(s)";
  if (ranks_per_host) out += (out.empty() ? "" : " x ") + std::to_string(*ranks_per_host) + " rank(s) per host";
  if (ranks && !(hosts && ranks_per_host)) out += (out.empty() ? "" : ", ") + std::to_string(*ranks) + " rank(s)";
  return out;
}

}  // namespace shardcal::formats
