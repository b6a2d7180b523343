#!/usr/bin/env python3
"""bench/scripts/regret_from_measurements.py against hand-computed values (ctest validate.regret_from_measurements).

Three launches of three transitions, measured medians in us (regret = median / best, >= 1):

            launch 1    launch 2    launch 3     regrets
  t1   A    100         150         100          A (1, 1.5, 1)     B (1.2, 1, 1.1)
       B    120         100         110
  t2   A    200         200         200          A (1, 1, 1)       B (1.5, 1.5, 1.5)
       B    300         300         300
  t3   X    100         100         160          X (1, 1, 1.6)     Y (1.35, 1.5, 1)
       Y    135         150         100

One-launch oracle (fastest in x, scored in y); p95 of three values [a <= b <= c] = b + 0.9 (c - b):
  1->2: A 1.5, X 1 -> [1, 1, 1.5] 1.45      1->3: A 1, X 1.6 -> 1.54    2->1: B 1.2, X 1 -> 1.18
  2->3: B 1.1, X 1.6 -> [1, 1.1, 1.6] 1.55  3->1: A 1, Y 1.35 -> 1.315  3->2: A 1.5, Y 1.5 -> 1.5
  above 1.2: 5 of 6; above 1.5: 2 (1.5 itself is not above).
Leave-one-out (lowest mean regret over the other two launches): held out 1: t1 B 1.2, t3 Y 1.35
  -> 1.335; held out 2: t1 A 1.5, t3 Y 1.5 -> 1.5; held out 3: t1 B 1.1, t3 X 1.6 -> 1.55.
Hindsight minimax: t1 B, t2 A, t3 Y (lowest worst case; the lowest mean over all launches would
  be X) -> per launch [1, 1.2, 1.35] 1.335, [1, 1, 1.5] 1.45, [1, 1, 1.1] 1.09; worst list
  t3 1.5, t1 1.2, t2 1.0.
A plan with wrong data is no candidate: W fastest but wrong in launch 1 -> the oracle picks A.
Bad input: one line "regret_from_measurements: ...", exit 2, nothing on stdout, for every refusal.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench", "scripts", "regret_from_measurements.py")
TIMES = {  # launch -> transition -> plan -> us
    1: {"t1": {"A": 100, "B": 120}, "t2": {"A": 200, "B": 300}, "t3": {"X": 100, "Y": 135}},
    2: {"t1": {"A": 150, "B": 100}, "t2": {"A": 200, "B": 300}, "t3": {"X": 100, "Y": 150}},
    3: {"t1": {"A": 100, "B": 110}, "t2": {"A": 200, "B": 300}, "t3": {"X": 160, "Y": 100}},
}
_n = [0]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def record(t, plans, sha="aa", wrong=()):
    ps = [{"role": "chosen" if i == 0 else "alternative", "rank": i, "steps": [p],
           "measured_us": {"median": us}, "wrong": 1 if p in wrong else 0}
          for i, (p, us) in enumerate(plans.items())]
    return {"schema": "shardcal.validate", "profile": {"sha256": sha},
            "transition": {"key": json.dumps({"t": t}), "from": t, "to": "R", "mesh": "4", "size": 8},
            "plans": ps}


def write(tmp, lines):
    _n[0] += 1
    path = os.path.join(tmp, f"f{_n[0]}.jsonl")
    with open(path, "w") as f:
        for ln in lines:
            f.write((ln if isinstance(ln, str) else json.dumps(ln)) + "\n")
    return path


def launch_file(tmp, times, **kw):
    return write(tmp, [record(t, p, **kw) for t, p in times.items()] + [{"schema": "shardcal.validate.summary"}])


def run(files, *flags):
    return subprocess.run([sys.executable, SCRIPT, *flags, *files], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def close(a, b):
    return abs(a - b) <= 1e-12


def check_values(tmp):
    files = [launch_file(tmp, TIMES[l]) for l in (1, 2, 3)]
    r = run(files, "--json")
    if r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stderr}")
    got = json.loads(r.stdout)
    want = {(1, 2): (1.45, 1.5, 1.0), (1, 3): (1.54, 1.6, 1.0), (2, 1): (1.18, 1.2, 1.0),
            (2, 3): (1.55, 1.6, 1.1), (3, 1): (1.315, 1.35, 1.0), (3, 2): (1.5, 1.5, 1.5)}
    pairs = {(p["from"], p["to"]): p for p in got["one_launch_oracle"]}
    if set(pairs) != set(want):
        fail(f"ordered pairs {sorted(pairs)}, expected {sorted(want)}")
    for k, (p95, mx, med) in want.items():
        g = pairs[k]
        if not (close(g["p95"], p95) and close(g["max"], mx) and close(g["median"], med)):
            fail(f"pair {k}: p95/max/median {g['p95']}/{g['max']}/{g['median']}, expected {p95}/{mx}/{med}")
    if got["oracle_pairs_over_goal"] != 5:
        fail(f"oracle_pairs_over_goal {got['oracle_pairs_over_goal']}, expected 5")
    for name, want_v in (("leave_one_out_p95", [1.335, 1.5, 1.55]), ("hindsight_minimax_p95", [1.335, 1.45, 1.09])):
        if len(got[name]) != 3 or any(not close(a, b) for a, b in zip(got[name], want_v)):
            fail(f"{name} {got[name]}, expected {want_v}")
    if got["leave_one_out_over_goal"] != 3:
        fail(f"leave_one_out_over_goal {got['leave_one_out_over_goal']}, expected 3")
    worst = [(json.loads(w["transition"])["t"], w["worst_regret"]) for w in got["minimax_worst"]]
    if [w[0] for w in worst] != ["t3", "t1", "t2"] or not all(close(a, b) for (_, a), b in zip(worst, [1.5, 1.2, 1.0])):
        fail(f"minimax worst list {worst}, expected t3 1.5, t1 1.2, t2 1.0")
    if got["launches"] != 3 or got["transitions"] != 3:
        fail(f"launches/transitions {got['launches']}/{got['transitions']}")
    r = run(files, "--json", "--goal", "1.5")
    if (r.returncode != 0 or json.loads(r.stdout)["oracle_pairs_over_goal"] != 2
            or json.loads(r.stdout)["leave_one_out_over_goal"] != 1):
        fail(f"--goal 1.5: expected 2 pairs and 1 held-out launch above (1.5 itself is not above): {r.stdout}{r.stderr}")
    r = run(files)
    out = r.stdout
    if (r.returncode != 0 or "above 1.2 in 5 of 6 ordered pairs" not in out
            or "above 1.2 in 3 of 3 launches" not in out
            or not (0 <= out.find("1.500  t3") < out.find("1.200  t1")) or "t2 -> " in out.split("1.1:")[-1]):
        fail(f"text output: exit {r.returncode}\n{out}{r.stderr}")
    # Two launches: no leave-one-out.
    r = run(files[:2], "--json")
    if r.returncode != 0 or json.loads(r.stdout)["leave_one_out_p95"] is not None:
        fail(f"two launches: leave_one_out_p95 should be null: {r.stdout}{r.stderr}")


def check_wrong(tmp):
    l1 = launch_file(tmp, {"t": {"W": 50, "A": 100, "B": 120}}, wrong=("W",))
    l2 = launch_file(tmp, {"t": {"W": 50, "A": 150, "B": 100}})
    r = run([l1, l2], "--json")
    if r.returncode != 0:
        fail(f"wrong plans: exit {r.returncode}: {r.stderr}")
    pairs = {(p["from"], p["to"]): p["max"] for p in json.loads(r.stdout)["one_launch_oracle"]}
    if not close(pairs[(1, 2)], 1.5):  # W left out: A is fastest in launch 1, 150/100 in launch 2
        fail(f"a plan with wrong data was a candidate: pair 1->2 regret {pairs[(1, 2)]}, expected 1.5")


def check_leave_one_out_uses_the_mean(tmp):
    # Over launches 1-2: P (1, 1.5) mean 1.25, Q (1.3, 1.3) mean 1.3 (S is the best in launch 2
    # only): the lowest mean picks P, which is best in launch 3 (the lowest max would pick Q: 2.0).
    ts = {1: {"P": 100, "Q": 130, "S": 200}, 2: {"P": 150, "Q": 130, "S": 100}, 3: {"P": 100, "Q": 200, "S": 300}}
    r = run([launch_file(tmp, {"t": ts[l]}) for l in (1, 2, 3)], "--json")
    if r.returncode != 0 or not close(json.loads(r.stdout)["leave_one_out_p95"][2], 1.0):
        fail(f"leave-one-out does not pick by the mean over the other launches: {r.stdout}{r.stderr}")


def check_edges(tmp):
    # A plan listed twice (chosen and greedy: same rank, same numbers) is one plan; a plan wrong
    # only in launch 2 is no candidate in launch 1 either; a median of 0 makes every regret 1 (as
    # validate); a plan without samples is no candidate (its median 1 is not the best); ties go
    # to the plan listed first.
    def rec(t, plans, wrong=(), samples=None):
        r = record(t, plans, wrong=wrong)
        if samples:
            for p in r["plans"]:
                if p["steps"][0] in samples:
                    p["measured_us"]["samples"] = 0
        return r

    l1 = [rec("dup", {"A": 100, "B": 120}), rec("w2", {"W": 50, "A": 100, "B": 120}),
          rec("zero", {"A": 0, "B": 10}), rec("nos", {"N": 1, "A": 100, "B": 200}, samples=("N",)),
          rec("tie", {"A": 100, "B": 100})]
    l2 = [rec("dup", {"A": 150, "B": 100}), rec("w2", {"W": 50, "A": 150, "B": 100}, wrong=("W",)),
          rec("zero", {"A": 0, "B": 10}), rec("nos", {"N": 1000, "A": 100, "B": 200}, samples=("N",)),
          rec("tie", {"A": 100, "B": 200})]
    l1[0]["plans"].append(dict(l1[0]["plans"][0], role="greedy"))  # A is chosen and greedy
    l2[0]["plans"].append(dict(l2[0]["plans"][0], role="greedy"))
    r = run([write(tmp, l1), write(tmp, l2)], "--json")
    if r.returncode != 0:
        fail(f"edges: exit {r.returncode}: {r.stderr}")
    got = json.loads(r.stdout)
    worst = {json.loads(w["transition"])["t"]: w["worst_regret"] for w in got["minimax_worst"]}
    # minimax: dup B (1.2 vs A 1.5); w2 like dup without W; zero 1; nos A (1, 1); tie A (1, 1)
    want = {"dup": 1.2, "w2": 1.2, "zero": 1.0, "nos": 1.0, "tie": 1.0}
    if set(worst) != set(want) or any(not close(worst[k], v) for k, v in want.items()):
        fail(f"edges: minimax worst {worst}, expected {want}")
    # oracle 1->2: dup A 1.5, w2 A 1.5 (W left out), zero 1, nos A 1 (N has no samples), tie A 1
    p12 = next(p for p in got["one_launch_oracle"] if (p["from"], p["to"]) == (1, 2))
    if not (close(p12["max"], 1.5) and close(p12["median"], 1.0) and close(p12["p95"], 1.5)):
        fail(f"edges: pair 1->2 {p12}, expected max 1.5, median 1.0, p95 1.5")


def check_bad_input(tmp):
    good = launch_file(tmp, TIMES[1])
    bad_utf8 = os.path.join(tmp, "latin1.jsonl")
    with open(bad_utf8, "wb") as f:
        f.write(b"\xff\xfe{not utf-8}\n")
    # Each bad file is launch 1 with one defect, so only the check named can refuse it.
    recs = [record(t, p) for t, p in TIMES[1].items()]
    t1 = recs[0]

    def bad(first, extra=()):
        return [good, write(tmp, [first] + recs[1:] + list(extra))]

    cases = {  # what -> (files, a word the message must contain)
        "one file": ([good], "at least two"),
        "missing file": ([good, os.path.join(tmp, "nope.jsonl")], "cannot read"),
        "not UTF-8": ([good, bad_utf8], "cannot read"),
        "not JSON": (bad(t1, ["{oops"]), "not JSON"),
        "not an object": (bad(t1, ["[1, 2]"]), "not a JSON object"),
        "no plans key": (bad({k: v for k, v in t1.items() if k != "plans"}), "plans"),
        "empty plans": (bad(dict(t1, plans=[])), "without plans"),
        "one id, two plans": (bad(dict(t1, plans=t1["plans"] + [dict(t1["plans"][0], measured_us={"median": 300})])),
                              "two different plans"),
        "negative median": (bad(dict(t1, plans=[dict(t1["plans"][0], measured_us={"median": -1})] + t1["plans"][1:])),
                            "not a finite time"),
        "NaN median": (bad(t1, ['{"schema": "shardcal.validate", "profile": {"sha256": "aa"}, "transition": '
                                '{"key": "{}", "from": "x", "to": "R", "mesh": "4", "size": 8}, "plans": '
                                '[{"rank": 0, "steps": ["A"], "measured_us": {"median": NaN}}]}']), "not a finite time"),
        "rank not an integer": (bad(dict(t1, plans=[dict(t1["plans"][0], rank=1.5)] + t1["plans"][1:])), "rank"),
        "key not a string": (bad(dict(t1, transition=dict(t1["transition"], key={"t": 1}))), "not a string"),
        "huge number": (bad(t1, ['{"x": ' + "9" * 5000 + "}"]), "not JSON"),
        "same file twice": ([good, good], "twice"),
        "goal not a number": ([good, good, "--goal", "x"], "--goal"),
        "goal below 1": ([good, good, "--goal", "0.5"], "--goal"),
        "every plan wrong": ([launch_file(tmp, {"t": {"A": 1}}, wrong=("A",)), launch_file(tmp, {"t": {"A": 1}})],
                             "wrong data"),
        "two profiles in a file": (bad(t1, [dict(record("t9", TIMES[1]["t1"]), profile={"sha256": "bb"})]), "two profiles"),
        "a transition twice": (bad(t1, [t1]), "appears twice"),
        "no validate records": ([good, write(tmp, [{"schema": "shardcal.validate.summary"}])], "no validate records"),
        "other profile": ([good, launch_file(tmp, TIMES[2], sha="bb")], "different profiles"),
        "other transitions": ([good, launch_file(tmp, {"t1": TIMES[2]["t1"]})], "other transitions"),
        "other plans": ([good, launch_file(tmp, dict(TIMES[2], t1={"A": 1, "C": 2}))], "other plans"),
    }
    for what, (fs, word) in cases.items():
        r = run(fs)
        lines = r.stderr.strip().splitlines()
        if (r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("regret_from_measurements: ")
                or word not in lines[0] or r.stdout):
            fail(f"{what}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r} (expected {word!r})")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_values(tmp)
        check_wrong(tmp)
        check_leave_one_out_uses_the_mean(tmp)
        check_edges(tmp)
        check_bad_input(tmp)
    print("regret_from_measurements: all checks passed")


if __name__ == "__main__":
    main()
