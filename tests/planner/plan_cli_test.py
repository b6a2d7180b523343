#!/usr/bin/python3
"""`shardbench plan` end to end: text and --json output, the dtensor-default equality for one
step through the CLI, k alternatives, nested-sharding report, and bad input (exit 2, one
`shardbench: error:` line naming the problem, nothing on stdout).

usage: plan_cli_test.py SHARDBENCH REPO
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def run(sb, *args):
    return subprocess.run([sb, "plan", *args], capture_output=True, text=True, timeout=120)


def dtensor_allgather_us(local_bytes, n, inter):
    # torch/distributed/tensor/_collective_utils.py allgather_cost, S -> R: bytes_gb = one rank's
    # block x n (GiB); bandwidth 87.7 GiB/s (x 0.22 inter-host), hop latency 0.6 (2.7) us.
    bw, lat = (87.7 * 0.22, 2.7) if inter else (87.7, 0.6)
    gb = local_bytes * n / 1024 ** 3
    hops = n - 1
    return 6.6 + hops * lat + (gb * hops / n) / bw * 1e6


def main():
    sb, repo = sys.argv[1], sys.argv[2]
    prof = os.path.join(repo, "configs", "profiles", "dtensor-default.json")
    base = ["--profile", prof]

    # S(0),S(1) -> R,S(0) of an 8192x8192 bf16 matrix on mesh 2x4 over 2 hosts, as text and JSON.
    ex = base + ["--mesh", "2x4", "--ranks-per-host", "4", "--shape", "8192x8192", "--dtype", "bf16",
                 "--from", "S(0),S(1)", "--to", "R,S(0)", "--k", "3"]
    r = run(sb, *ex)
    assert r.returncode == 0, r.stderr
    for needle in ("cost-based plan:", "greedy plan (plan_redistribution):", "3 cheapest distinct plans",
                   "all_gather", "all_to_all"):
        assert needle in r.stdout, (needle, r.stdout)
    r = run(sb, *ex, "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    for key in ("total_us", "steps", "greedy_total_us", "alternatives", "profile", "planner"):
        assert key in j, (key, j)
    assert j["planner"] == "cost"
    assert j["profile"]["cluster"] == "dtensor-default" and len(j["profile"]["sha256"]) == 64
    assert len(j["alternatives"]) == 3
    assert j["alternatives"][0]["total_us"] == j["total_us"]
    assert all(a["total_us"] <= b["total_us"] for a, b in zip(j["alternatives"], j["alternatives"][1:]))
    assert j["total_us"] <= j["greedy_total_us"]
    assert math.isclose(sum(s["cost_us"] for s in j["steps"]), j["total_us"], rel_tol=1e-12)
    for s in j["steps"]:
        for key in ("mesh_dim", "from", "to", "collective", "group_size", "bytes", "cost_us"):
            assert key in s, (key, s)

    # One S -> R step on a 1-D mesh of 4 (one host of 4), f32 [4096, 256]: DTensor's number.
    r = run(sb, *base, "--mesh", "4", "--ranks-per-host", "4", "--shape", "4096x256", "--from", "S(0)",
            "--to", "R", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    want = dtensor_allgather_us(4096 * 256 * 4 / 4, 4, inter=False)
    assert len(j["steps"]) == 1 and j["steps"][0]["collective"] == "all_gather", j["steps"]
    assert abs(j["total_us"] - want) <= 1e-9 * want, (j["total_us"], want)

    # Nested sharding: the received-bytes report.
    r = run(sb, *base, "--mesh", "2x2", "--shape", "64x64", "--from", "S(0),S(0)", "--to", "S(1),S(1)")
    assert r.returncode == 0 and "nested sharding: bytes received" in r.stdout, r.stdout + r.stderr
    r = run(sb, *base, "--mesh", "2x2", "--shape", "64x64", "--from", "S(0),S(0)", "--to", "S(1),S(1)", "--json")
    j = json.loads(r.stdout)
    assert j["recv_bytes"]["max_lower_bound"] <= j["recv_bytes"]["max_received"], j["recv_bytes"]

    # A Partial the target keeps is not new data: the bound is what the source block lacks
    # (64 B here), never above what the cost plan receives.
    r = run(sb, *base, "--mesh", "2x2x2", "--shape", "8x8", "--from", "P,S(0),S(0)", "--to", "P,S(0),R", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["recv_bytes"]["max_lower_bound"] == 64, j["recv_bytes"]
    assert j["recv_bytes"]["max_lower_bound"] <= j["recv_bytes"]["max_received"], j["recv_bytes"]

    # A profile without all_to_all models: the cost plan avoids it (all_gather + local slice);
    # the greedy plan's all_to_all is shown as not priceable, not an error.
    with open(prof) as f:
        p = json.load(f)
    p["models"] = [m for m in p["models"] if m["collective"] != "all_to_all"]
    with tempfile.TemporaryDirectory() as tmp:
        no_a2a = os.path.join(tmp, "no-a2a.json")
        with open(no_a2a, "w") as f:
            json.dump(p, f)
        args = ["--profile", no_a2a, "--mesh", "4", "--shape", "8x8", "--from", "S(0)", "--to", "S(1)"]
        r = run(sb, *args)
        assert r.returncode == 0, r.stderr
        assert "greedy plan (plan_redistribution): not priceable (no model for all_to_all)" in r.stdout, r.stdout
        r = run(sb, *args, "--json")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        assert [s["collective"] for s in j["steps"]] == ["all_gather", "local_slice"], j["steps"]
        assert math.isfinite(j["total_us"]), j
        assert j["greedy_total_us"] is None and j["greedy_unpriced"] == "no model for all_to_all", j
        a2a = [s for s in j["greedy_steps"] if s["collective"] == "all_to_all"]
        assert a2a and all(s["cost_us"] is None and s["unpriced"] == "no model for all_to_all" for s in a2a), j
        for key in ("mesh_dim", "from", "to", "group_size", "bytes", "cost_us", "extrapolated", "text"):
            assert all(key in s for s in j["greedy_steps"]), (key, j["greedy_steps"])

    # Bad input: exit 2, one error line naming the problem, nothing on stdout.
    bad = [
        (["--profile", "/nonexistent.json", "--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "R"], "cannot open profile"),
        (base + ["--mesh", "2x2", "--shape", "8", "--from", "S(0),R", "--to", "R"], "--to"),
        (base + ["--mesh", "4", "--shape", "8", "--from", "S(2)", "--to", "R"], "--from"),
        (base + ["--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "R", "--dtype", "f17"], "f17"),
        (base + ["--mesh", "2x2x2", "--shape", "8x8", "--from", "S(0),R,S(1)", "--to", "R,P,S(0)",
                 "--max-states", "3"], "max_states"),
    ]
    for args, needle in bad:
        r = run(sb, *args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert r.stdout == "", (args, r.stdout)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("shardbench: error:") and needle in lines[0], (args, r.stderr)
    r = subprocess.run([sb, "plan", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--ranks-per-host" in r.stdout and "greedy" in r.stdout, r.stdout
    print("shardbench plan: output, dtensor-default equality, nested report and bad inputs OK")


if __name__ == "__main__":
    main()
