#include "sweep/slurm_env.hpp"

#include <algorithm>
#include <cstdlib>

#include "shardcal/error.hpp"

namespace shardbench::sweep {

namespace {

int positive_int(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw shardcal::Error(what + "=\"" + text + "\": expected a positive integer");
  const int v = std::stoi(text);
  if (v < 1) throw shardcal::Error(what + "=\"" + text + "\": expected a positive integer");
  return v;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::vector<int> parse_tasks_per_node(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::size_t pos = 0;
  const auto bad = [&](const std::string& why) {
    return shardcal::Error(what + "=\"" + text + "\": " + why +
                           " (Slurm's form is COUNT[(xREPEAT)][,...], e.g. \"4(x2),3\")");
  };
  if (text.empty()) throw bad("empty");
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t paren = item.find('(');
    int count = 0, repeat = 1;
    try {
      if (paren == std::string::npos) {
        count = positive_int(item, what);
      } else {
        if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
          throw bad("malformed item \"" + item + "\"");
        count = positive_int(item.substr(0, paren), what);
        repeat = positive_int(item.substr(paren + 2, item.size() - paren - 3), what);
      }
    } catch (const shardcal::Error&) {
      throw bad("malformed item \"" + item + "\"");
    }
    if (out.size() + std::size_t(repeat) > 1000000) throw bad("more than 10^6 nodes");
    out.insert(out.end(), std::size_t(repeat), count);
    pos = comma + 1;
  }
  return out;
}

nlohmann::json SlurmStep::to_json() const {
  return {{"job_id", job_id},
          {"source", source},
          {"num_tasks", num_tasks},
          {"num_nodes", num_nodes},
          {"tasks_per_node", tasks_per_node}};
}

SlurmStep read_slurm_env(const EnvLookup& env) {
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  SlurmStep s;
  s.job_id = get("SLURM_JOB_ID");
  struct Names {
    const char *tasks, *nodes, *per_node;
  };
  const Names step{"SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_NODES", "SLURM_STEP_TASKS_PER_NODE"};
  const Names job{"SLURM_NTASKS", "SLURM_JOB_NUM_NODES", "SLURM_TASKS_PER_NODE"};
  const Names* use = nullptr;
  if (!get(step.tasks).empty()) use = &step, s.source = "step";
  else if (!get(job.tasks).empty()) use = &job, s.source = "job";
  if (use == nullptr) return s;
  s.present = true;
  s.num_tasks = positive_int(get(use->tasks), use->tasks);
  std::string nodes = get(use->nodes);
  const char* nodes_name = use->nodes;
  if (nodes.empty() && use == &job) nodes = get(nodes_name = "SLURM_NNODES");
  const std::string per_node = get(use->per_node);
  if (nodes.empty() || per_node.empty())
    throw shardcal::Error(std::string("Slurm environment: ") + use->tasks + " is set but " +
                          (nodes.empty() ? nodes_name : use->per_node) +
                          " is not; start the ranks with srun (or unset the SLURM_* variables "
                          "when not running under Slurm)");
  s.num_nodes = positive_int(nodes, nodes_name);
  s.tasks_per_node = parse_tasks_per_node(per_node, use->per_node);
  s.description = std::string(use->tasks) + "=" + get(use->tasks) + ", " + nodes_name + "=" +
                  nodes + ", " + use->per_node + "=" + per_node;
  int sum = 0;
  for (int n : s.tasks_per_node) sum += n;
  if (int(s.tasks_per_node.size()) != s.num_nodes || sum != s.num_tasks)
    throw shardcal::Error("Slurm environment is inconsistent: " + s.description + " (expands to " +
                          std::to_string(s.tasks_per_node.size()) + " node(s), " +
                          std::to_string(sum) + " task(s))");
  return s;
}

SlurmStep read_slurm_env() {
  return read_slurm_env([](const char* name) { return std::getenv(name); });
}

std::string slurm_topology_mismatch(const SlurmStep& step, int world, const shardcal::Topology& topo) {
  if (!step.present) return "";
  if (world == 1 && step.num_tasks > 1)
    return "Slurm started " + std::to_string(step.num_tasks) + " tasks (" + step.description +
           ") but this rank's world has 1 rank: each task started its own MPI world, so srun did "
           "not wire them together; launch with `srun --mpi=pmix` (`srun --mpi=list` shows the "
           "plugins this Slurm has; scripts/slurm/calibrate.sbatch picks one)";
  if (world != step.num_tasks) return "";  // another launcher (mpirun -np N inside an allocation)
  std::vector<int> found(std::size_t(topo.num_hosts), 0);
  for (int h : topo.host_of_rank)
    if (h >= 0 && h < topo.num_hosts) ++found[std::size_t(h)];
  std::vector<int> want = step.tasks_per_node, got = found;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (topo.num_hosts == step.num_nodes && want == got) return "";
  std::string hosts;
  for (int h = 0; h < topo.num_hosts; ++h)
    for (std::size_t r = 0; r < topo.host_of_rank.size(); ++r)
      if (topo.host_of_rank[r] == h) {
        hosts += (h ? ", " : "") + topo.hostnames[r] + ": " + std::to_string(found[std::size_t(h)]);
        break;
      }
  return "topology mismatch: Slurm says " + std::to_string(step.num_nodes) + " node(s) with [" +
         join(step.tasks_per_node) + "] task(s) (" + step.description + "), but the " +
         std::to_string(world) + " ranks found " + std::to_string(topo.num_hosts) +
         " host(s) with [" + join(found) + "] rank(s) (" + hosts +
         "). Link classes (intra- vs inter-host) would be wrong. If the nodes report the same "
         "hostname (containers), set SHARDCAL_HOSTNAME per node (e.g. "
         "SHARDCAL_HOSTNAME=$SLURMD_NODENAME); if SHARDCAL_HOSTNAME is set by hand, fix or unset "
         "it";
}

}  // namespace shardbench::sweep
