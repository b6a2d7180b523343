#!/usr/bin/python3
"""Writes one rank's synthetic torch.profiler trace of about SIZE_MB megabytes (streamed, never
held in memory) for the import memory bound (docs/PERFORMANCE.md "Importing a trace").

usage: make_big_trace.py OUT.json[.gz] SIZE_MB [NCCL_EVERY]

Mostly what a training trace is mostly made of: aten:: CPU ops with Input Dims / Concrete Inputs
and compute kernels; one NCCL all_reduce (with torch's comm metadata, tests/data/traces/
make_traces.py's layout) every NCCL_EVERY events (default 50), at 8 sizes.
"""
import gzip
import json
import sys

out, size_mb = sys.argv[1], int(sys.argv[2])
every = int(sys.argv[3]) if len(sys.argv) > 3 else 50
opener = gzip.open if out.endswith(".gz") else open
kw = {"compresslevel": 1} if out.endswith(".gz") else {}
head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1,
                            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                           "pg_size": 8, "ranks": list(range(8))}], "nccl_version": "2.21.5"},
        "record_shapes": 1, "host_name": "nodeA"}
target = size_mb * 1000 * 1000
with opener(out, "wt", **kw) as f:
    text = json.dumps(head)[:-1] + ', "traceEvents": [\n'
    f.write(text)
    written, i, ts = len(text), 0, 1000.0
    while written < target:
        if i % every == every - 1:
            s = 4096 << (i // every % 8)
            e = {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                 "pid": 0, "tid": 31, "ts": ts, "dur": 20.0 + s / 3e4,
                 "args": {"External id": i, "device": 0, "stream": 31, "correlation": i + 7,
                          "Collective name": "allreduce", "dtype": "Float", "In msg nelems": s // 4,
                          "Out msg nelems": s // 4, "Group size": 8, "In split size": "[]", "Out split size": "[]",
                          "Global rank start": 0, "Global rank stride": 1, "Process Group Name": "0",
                          "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}}
        elif i % 2:
            e = {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                 "pid": 0, "tid": 7, "ts": ts, "dur": 35.5,
                 "args": {"External id": i, "device": 0, "stream": 7, "correlation": i + 7, "registers per thread": 168,
                          "shared memory": 213248, "grid": [132, 1, 1], "block": [384, 1, 1]}}
        else:
            e = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": ts, "dur": 12.25,
                 "args": {"External id": i, "Record function id": 0, "Concrete Inputs": ["", ""],
                          "Input type": ["c10::BFloat16", "c10::BFloat16"],
                          "Input Strides": [[4096, 1], [1, 4096]], "Input Dims": [[8192, 4096], [4096, 4096]],
                          "Ev Idx": i}}
        line = json.dumps(e) + ",\n"
        f.write(line)
        written += len(line)
        i += 1
        ts += 40.0
    f.write(json.dumps({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": ts}) +
            '\n], "traceName": "big"}\n')
print(f"{out}: {i} events, {written / 1e6:.0f} MB of JSON")
