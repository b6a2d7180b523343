#!/usr/bin/python3
"""Writes synthetic torch.profiler traces in torch's schema for the import/check tests.

usage: make_traces.py [-h] OUTDIR

The layout follows what torch 2.15 writes (checked in the 2.15.0 wheel and a trace it made):
top-level "schemaVersion", "deviceProperties" [{id, name, ...}], "distributedInfo" (from
torch/profiler/profiler.py _get_distributed_info: backend, rank, world_size, pg_count,
pg_config [{pg_name, pg_desc, backend_config, pg_size, ranks}], nccl_version "X.Y.Z"),
"record_shapes", "host_name", "traceEvents", "traceName"; CPU ops "c10d::<op>" with "Input Dims"
/ "Input type" / "Concrete Inputs" by the c10d op schemas (torch/csrc/distributed/c10d/Ops.cpp),
"record_param_comms" inside them with the comm metadata (ParamCommsDebugInfo: "Collective name",
"dtype", "In msg nelems", "Out msg nelems", "Group size", "In split size", "Out split size",
"Global rank start", "Global rank stride", "Process Group Name", "Process Group Description",
"Process Group Ranks", lists written as text "[0, 1]", and "Seq", the call's number in its
process group, torch/csrc/profiler/util.h kSeqNum), and GPU kernels (cat "kernel",
"ncclDevKernel_<Coll>_..."), whose args carry "External id" (the innermost CPU op at launch:
record_param_comms) and, in recent torch, the same comm metadata.

Scenarios (file names are what the tests use):
  mesh/rank{r}.json(.gz)   8 ranks, 2 hosts x 4, a 2x4 mesh: all_gather (bf16) on the groups inside
                           hosts [0-3] [4-7], reduce_scatter (f32) on the groups across hosts
                           [0,4] [1,5] [2,6] [3,7], all_reduce (f32) on the world, plus send/recv
                           and barrier; ranks arrive skewed, and in every call one rank of the
                           group has no wait: its duration is the call's own time (expected.json)
  nometa/rank{r}.json      4 ranks, 1 host: no comm metadata anywhere (older torch), sizes from
                           the c10d:: ops' Input Dims only
  noshapes/rank0.json      NCCL kernels without comm metadata and no c10d:: ops
  otherjob/rank1.json      a rank of a job of world size 16
  badworld/rank0.json      world_size 4 but a process group holding rank 6
  shifted/rank{r}.json     4 ranks, 1 host, all_reduce: rank 3's window starts one step later
                           (its first step's calls missing); with "Seq" (expected.json: the
                           calls of the steps all ranks hold)
  shifted-noseq/rank{r}.json  the same without "Seq" (the import must refuse to align them)
  expected.json            per (collective, group, bytes): the call times each point must hold
"""
import argparse
import gzip
import json
import os

STEPS = 6
SIZES = [65536, 262144, 1048576, 4194304, 16777216]  # bytes of the table's S
DT = {"bf16": ("BFloat16", "c10::BFloat16", 2), "f32": ("Float", "float", 4)}


def list_text(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


def call_time_us(kind, nbytes, step=0):
    """The collective's own time: latency + bytes / bandwidth, per link class, with a +-2 %
    step-to-step variation (so a profile fitted to the calls has an interval of some width)."""
    lat, gbps = {"inner": (15.0, 120.0), "cross": (30.0, 20.0), "world": (40.0, 30.0)}[kind]
    return round((lat + nbytes / (gbps * 1e3)) * (1.0 + 0.01 * ((step * 3) % 5 - 2)), 3)


class Trace:
    def __init__(self, rank, world, host, pgs, nccl="2.21.5", backend="nccl", seq=True):
        self.rank, self.world, self.host = rank, world, host
        self.events, self.ext, self.ts = [], 100, 1000.0
        self.seq, self.seqs = seq, {}  # write "Seq"; per process group: the next number
        self.meta = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85020737536,
                                  "computeMajor": 9, "computeMinor": 0, "numSms": 132} for i in range(4)],
            "distributedInfo": {"backend": backend, "rank": rank, "world_size": world, "pg_count": len(pgs),
                                "pg_config": [{"pg_name": n, "pg_desc": d, "backend_config": "cuda:nccl",
                                               "pg_size": len(r), "ranks": r} for n, d, r in pgs
                                              if rank in r or n == "bad"],
                                "nccl_version": nccl},
            "record_shapes": 1,
            "host_name": host,
        }

    def call(self, op, torch_name, kernel, dtype, in_n, out_n, pg, dur, meta=True, dims=None, types=None):
        name, desc, ranks = pg
        st, cname, es = DT[dtype]
        ext_op, ext_rpc = self.ext, self.ext + 1
        self.ext += 2
        t0 = self.ts
        self.ts += 50.0
        args_op = {"External id": ext_op, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0,
                   "Input Dims": dims, "Input type": types, "Concrete Inputs": [""] * len(dims),
                   "Ev Idx": ext_op}
        comm = {"Collective name": torch_name, "dtype": st, "In msg nelems": in_n, "Out msg nelems": out_n,
                "Group size": len(ranks), "In split size": "[]", "Out split size": "[]",
                "Global rank start": ranks[0], "Global rank stride": (ranks[1] - ranks[0]) if len(ranks) > 1 else 1,
                "Process Group Name": name, "Process Group Description": desc,
                "Process Group Ranks": list_text(ranks)}
        gkey = (name, tuple(ranks))
        self.seqs[gkey] = self.seqs.get(gkey, 0) + 1
        if self.seq:
            comm["Seq"] = self.seqs[gkey]
        args_rpc = {"External id": ext_rpc, "Record function id": 0, "Ev Idx": ext_rpc}
        if meta:
            args_rpc.update(comm)
        pid, tid = 4242 + self.rank, 4242 + self.rank
        self.events.append({"ph": "X", "cat": "cpu_op", "name": "c10d::" + op, "pid": pid, "tid": tid,
                            "ts": t0, "dur": 30.0, "args": args_op})
        self.events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid,
                            "ts": t0 + 2.0, "dur": 20.0, "args": args_rpc})
        kargs = {"External id": ext_rpc, "queued": 0, "device": self.rank % 4, "context": 1, "stream": 31,
                 "correlation": ext_rpc + 7, "registers per thread": 96, "shared memory": 0,
                 "blocks per SM": 0.25, "warps per SM": 1.0, "grid": [32, 1, 1], "block": [544, 1, 1],
                 "est. achieved occupancy %": 0}
        if meta:
            kargs.update(comm)
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": self.rank % 4, "tid": 31,
                            "ts": t0 + 10.0, "dur": dur, "args": kargs})
        self.ts = max(self.ts, t0 + 10.0 + dur + 5.0)

    def write(self, path, gz=False):
        doc = dict(self.meta)
        doc["traceEvents"] = self.events
        doc["traceName"] = path
        text = json.dumps(doc, indent=1)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if gz:
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)


def wait_us(rank, group, k):
    """Skewed arrival: the rank at position k % n of the group waits 0, the others up to 80 us."""
    pos = group.index(rank)
    return 0.0 if pos == k % len(group) else 10.0 * ((rank * 7 + k * 3) % 8 + 1)


def mesh(out, expected):
    world, hosts = 8, ["nodeA", "nodeB"]
    inner = [("1", "mesh_dim_1", [0, 1, 2, 3]), ("2", "mesh_dim_1", [4, 5, 6, 7])]
    cross = [(str(3 + i), "mesh_dim_0", [i, i + 4]) for i in range(4)]
    default = ("0", "default_pg", list(range(world)))
    pgs = [default] + inner + cross
    for r in range(world):
        t = Trace(r, world, hosts[r // 4], pgs)
        gi = next(g for g in inner if r in g[2])
        gc = next(g for g in cross if r in g[2])
        k = 0
        for step in range(STEPS):
            for s in SIZES:
                # all_gather_into_tensor, bf16: In = the rank's shard, Out = n x shard (= S)
                n = 4
                e_out = s // 2
                d = call_time_us("inner", s, step)
                t.call("_allgather_base_", "_allgather_base", "ncclDevKernel_AllGather_RING_LL", "bf16",
                       e_out // n, e_out, gi, d + wait_us(r, gi[2], k),
                       dims=[[e_out], [e_out // n], [], [], []], types=["c10::BFloat16"] * 2 + ["", "Scalar", "Scalar"])
                if r == gi[2][0]:
                    expected.setdefault(f"all_gather|{','.join(map(str, gi[2]))}|{s}", []).append(d)
                # reduce_scatter_tensor, f32, across hosts: In = S (whole input), Out = S / n
                e_in = s // 4
                d = call_time_us("cross", s, step)
                t.call("_reduce_scatter_base_", "_reduce_scatter_base", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
                       "f32", e_in, e_in // 2, gc, d + wait_us(r, gc[2], k),
                       dims=[[e_in // 2], [e_in], [], [], [], []], types=["float", "float", "", "", "Scalar", "Scalar"])
                if r == gc[2][0]:
                    expected.setdefault(f"reduce_scatter|{','.join(map(str, gc[2]))}|{s}", []).append(d)
                # all_reduce on the world, f32
                d = call_time_us("world", s, step)
                t.call("allreduce_", "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "f32", s // 4, s // 4,
                       default, d + wait_us(r, default[2], k),
                       dims=[[[s // 4]], [], [], [], [], []], types=["TensorList", "", "", "", "Scalar", "Scalar"])
                if r == 0:
                    expected.setdefault(f"all_reduce|{','.join(map(str, default[2]))}|{s}", []).append(d)
                k += 1
            # point-to-point and a barrier: counted and skipped
            peer = r ^ 1
            t.call("send" if r % 2 == 0 else "recv_", "send" if r % 2 == 0 else "recv",
                   "ncclDevKernel_SendRecv", "f32", 1024, 1024, ("0", "default_pg", sorted({r, peer})), 12.0,
                   dims=[[[1024]], [], [], []], types=["TensorList", "", "", ""])
            t.call("barrier", "barrier", "ncclDevKernel_AllReduce_Sum_u8_RING_LL", "f32", 1, 1, default, 9.0,
                   dims=[[1], [], [], [], []], types=["unsigned char", "", "", "", ""])
        t.write(os.path.join(out, "mesh", f"rank{r}.json" + (".gz" if r % 2 else "")), gz=bool(r % 2))


def nometa(out, expected):
    world = 4
    default = ("0", "default_pg", list(range(world)))
    for r in range(world):
        t = Trace(r, world, "nodeA", [default])
        k = 0
        for step in range(STEPS):
            for s in SIZES:
                e = s // 4
                d = call_time_us("inner", s, step)
                t.call("allreduce_", "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "f32", e, e, default,
                       d + wait_us(r, default[2], k), meta=False,
                       dims=[[[e]], [], [], [], [], []], types=["TensorList", "", "", "", "Scalar", "Scalar"])
                if r == 0:
                    expected.setdefault(f"nometa|all_reduce|{s}", []).append(d)
                e_out = s // 4
                t.call("_allgather_base_", "_allgather_base", "ncclDevKernel_AllGather_RING_LL", "f32", e_out // 4,
                       e_out, default, d + wait_us(r, default[2], k), meta=False,
                       dims=[[e_out], [e_out // 4], [], [], []], types=["float", "float", "", "Scalar", "Scalar"])
                k += 1
        t.write(os.path.join(out, "nometa", f"rank{r}.json"))


def bad(out):
    default = ("0", "default_pg", [0, 1])
    # NCCL kernels, no metadata, no c10d ops (record_shapes off on an older torch)
    t = Trace(0, 2, "nodeA", [default])
    for i in range(3):
        t.events.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
                         "pid": 0, "tid": 31, "ts": 100.0 + 50 * i, "dur": 20.0,
                         "args": {"External id": 9 + i, "device": 0, "stream": 31, "correlation": 20 + i}})
    t.write(os.path.join(out, "noshapes", "rank0.json"))
    # another job's rank (world 16)
    g16 = ("0", "default_pg", list(range(16)))
    t = Trace(1, 16, "nodeC", [g16])
    t.call("allreduce_", "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "f32", 1024, 1024, g16, 50.0,
           dims=[[[1024]], [], [], [], [], []], types=["TensorList", "", "", "", "Scalar", "Scalar"])
    t.write(os.path.join(out, "otherjob", "rank1.json"))
    # world_size 4, but a process group with rank 6
    g = ("0", "default_pg", [0, 6])
    t = Trace(0, 4, "nodeA", [g])
    t.call("allreduce_", "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "f32", 1024, 1024, g, 50.0,
           dims=[[[1024]], [], [], [], [], []], types=["TensorList", "", "", "", "Scalar", "Scalar"])
    t.write(os.path.join(out, "badworld", "rank0.json"))


def shifted(out, expected):
    """4 ranks; rank 3 profiled one step later than the others (its first step missing), with
    and without "Seq". Each step: all_reduce of every size; the rank at k % 4 does not wait."""
    world = 4
    default = ("0", "default_pg", list(range(world)))
    for variant, seq in (("shifted", True), ("shifted-noseq", False)):
        for r in range(world):
            t = Trace(r, world, "nodeA", [default], seq=seq)
            k = 0
            for step in range(STEPS):
                for s in SIZES:
                    e = s // 4
                    # the step's own time: distinct per step, so a misaligned merge shows
                    d = round(call_time_us("inner", s, step) * (1.0 + 0.05 * step), 3)
                    w = wait_us(r, default[2], k)
                    if r == 3 and step == 0:
                        t.seqs[(default[0], tuple(default[2]))] = t.seqs.get((default[0], tuple(default[2])), 0) + 1
                    else:
                        t.call("allreduce_", "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "f32", e, e,
                               default, d + w, dims=[[[e]], [], [], [], [], []],
                               types=["TensorList", "", "", "", "Scalar", "Scalar"])
                    if variant == "shifted" and r == 0 and step > 0:
                        expected.setdefault(f"shifted|all_reduce|{s}", []).append(d)
                    k += 1
            t.write(os.path.join(out, variant, f"rank{r}.json"))


def main():
    ap = argparse.ArgumentParser(description="Write synthetic torch.profiler traces (the scenarios "
                                 "of this file's docstring) and expected.json under OUTDIR.")
    ap.add_argument("outdir", metavar="OUTDIR", help="directory to write the traces into")
    out = ap.parse_args().outdir
    expected = {}
    mesh(out, expected)
    nometa(out, expected)
    bad(out)
    shifted(out, expected)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
