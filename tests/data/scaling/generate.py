"""NCCL-like nccl-tests logs at several node counts, for testing host-count transport.

No public log set has one cluster at several node counts, so these are synthetic: each time is
torch 2.15's analytical copy of NCCL's tuning model (torch/_inductor/comm_analysis.py
_nccl_best_algo_time: ring/tree x LL/LL128/Simple, per-hop latencies, NIC efficiency by node
count; GPU type as on this CPU machine) times log-normal noise (2 %), written in nccl-tests'
text format. They test the transport's arithmetic on curves with switches the profile does not
know; they are not evidence about any real cluster (docs/CALIBRATION.md "Other host counts").

    cd tests/data/scaling && ../../../.venv/bin/python generate.py
"""
import sys, random, math
import torch._inductor.comm_analysis as ca
coll_map = {"all_reduce": ca.NCCL_COLL.ALL_REDUCE, "all_gather": ca.NCCL_COLL.ALL_GATHER,
            "reduce_scatter": ca.NCCL_COLL.REDUCE_SCATTER}
def write(path, coll, nodes, gpn=8, noise=0.02, seed=0, host="node"):
    rnd = random.Random(seed)
    n = nodes * gpn
    lines = [f"# Collective test starting: {coll}_perf", "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
             "#", "# Using devices"]
    for r in range(n):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {1000+r:6d} on {host}{r//gpn:03d} device {r%gpn:2d} [0000:04:00] NVIDIA H100 80GB HBM3")
    lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]
    s = 8 if coll == "all_reduce" else 8 * n
    while s <= 8 << 30:
        t, _, _ = ca._nccl_best_algo_time(s, n, coll_map[coll])
        t1 = t * math.exp(rnd.gauss(0, noise)); t2 = t * math.exp(rnd.gauss(0, noise))
        lines.append(f"{s:12d} {s//4:13d}     float     sum      -1 {t1:8.1f}   0.00    0.00      0 {t2:8.1f}   0.00    0.00      0")
        s *= 2
    open(path, "w").write("\n".join(lines) + "\n")
for coll in ("all_reduce", "all_gather"):
    for nodes in (2, 4, 8, 16):
        write(f"synth-{coll}-{nodes}x8.txt", coll, nodes, seed=nodes)
