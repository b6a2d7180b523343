#!/usr/bin/env python3
"""bench/scripts/regret_floor.py against hand-computed values (ctest validate.regret_floor).

Three launches of two transitions with two plans each (A, B), measured medians in us:

            launch 1    launch 2    launch 3
  t1   A    100         150         100
       B    120         100         110
  t2   A    200         200         200
       B    300         300         300

Previous-launch oracle, t1: fastest in 1 is A -> regret in 2 = 150/100 = 1.5, in 3 = 1.0;
fastest in 2 is B -> in 1 1.2, in 3 1.1; fastest in 3 is A -> in 1 1.0, in 2 1.5. t2 always 1.0.
p95 over two transitions (linear): 1 + 0.95 * (r_t1 - 1) for r_t1 >= 1 (t2 = 1.0 sorts first).
Hindsight minimax, t1: worst regret A = 1.5, B = 1.2 -> B, regrets (1.2, 1.0, 1.1); t2: A.
Bad input: fewer than two files, different plan sets, different profiles -> exit 2, one line.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench", "scripts", "regret_floor.py")
TIMES = {  # launch -> transition -> plan -> us
    1: {"t1": {"A": 100, "B": 120}, "t2": {"A": 200, "B": 300}},
    2: {"t1": {"A": 150, "B": 100}, "t2": {"A": 200, "B": 300}},
    3: {"t1": {"A": 100, "B": 110}, "t2": {"A": 200, "B": 300}},
}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def write(tmp, launch, times, sha="aa", extra_plan=False):
    path = os.path.join(tmp, f"v{launch}_{sha}_{int(extra_plan)}.jsonl")
    with open(path, "w") as f:
        for t, plans in times.items():
            ps = [{"steps": [p], "measured_us": {"median": us}} for p, us in plans.items()]
            if extra_plan:
                ps.append({"steps": ["C"], "measured_us": {"median": 1.0}})
            f.write(json.dumps({"schema": "shardcal.validate", "profile": {"sha256": sha},
                                "transition": {"key": json.dumps({"from": t, "to": "R", "mesh": "4", "size": 8})},
                                "plans": ps}) + "\n")
        f.write(json.dumps({"schema": "shardcal.validate.summary"}) + "\n")
    return path


def run(files, *flags):
    return subprocess.run([sys.executable, SCRIPT, *flags, *files], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        files = [write(tmp, l, TIMES[l]) for l in (1, 2, 3)]
        r = run(files, "--json")
        if r.returncode != 0:
            fail(f"exit {r.returncode}: {r.stderr}")
        got = json.loads(r.stdout)
        t1 = {(1, 2): 1.5, (1, 3): 1.0, (2, 1): 1.2, (2, 3): 1.1, (3, 1): 1.0, (3, 2): 1.5}
        pairs = {(p["from"], p["to"]): p for p in got["previous_launch_oracle"]}
        if set(pairs) != set(t1):
            fail(f"ordered pairs {sorted(pairs)}, expected {sorted(t1)}")
        for k, r1 in t1.items():
            want = 1 + 0.95 * (r1 - 1)
            if abs(pairs[k]["p95"] - want) > 1e-12 or abs(pairs[k]["max"] - r1) > 1e-12:
                fail(f"pair {k}: p95 {pairs[k]['p95']} max {pairs[k]['max']}, expected {want} and {r1}")
        if got["oracle_pairs_over_goal"] != 2:  # 1.475 twice > 1.2; 1.19 and 1.095 are not
            fail(f"oracle_pairs_over_goal {got['oracle_pairs_over_goal']}, expected 2")
        want_mm = [1 + 0.95 * 0.2, 1.0, 1 + 0.95 * 0.1]
        if any(abs(a - b) > 1e-12 for a, b in zip(got["hindsight_minimax_p95"], want_mm)):
            fail(f"hindsight minimax {got['hindsight_minimax_p95']}, expected {want_mm}")
        if got["launches"] != 3 or got["transitions"] != 2:
            fail(f"launches/transitions {got['launches']}/{got['transitions']}")
        r = run(files)
        if r.returncode != 0 or "above 1.2 in 2 of 6 ordered pairs" not in r.stdout:
            fail(f"text output: exit {r.returncode}\n{r.stdout}{r.stderr}")

        bad = {
            "one file": [files[0]],
            "other plans": [files[0], write(tmp, 2, TIMES[2], extra_plan=True)],
            "other profile": [files[0], write(tmp, 2, TIMES[2], sha="bb")],
            "missing file": [files[0], os.path.join(tmp, "nope.jsonl")],
        }
        for what, fs in bad.items():
            r = run(fs)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("regret_floor: ") or r.stdout:
                fail(f"{what}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
    print("regret_floor: all checks passed")


if __name__ == "__main__":
    main()
