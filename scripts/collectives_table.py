#!/usr/bin/python3
"""Keep the collective table's data copies equal to the C++ table (core/src/collectives.cpp).

Usage: collectives_table.py check SHARDBENCH REPO   exit 1 when a copy differs (test cli.collectives_table)
       collectives_table.py write SHARDBENCH REPO   rewrite the copies from the C++ table

The copies: calibrate/python/shardcal/collectives.json (what `shardbench info --collectives --json`
prints; the Python package and scripts/emulate read it) and the collective-name enums of
configs/schema/*.schema.json (every enum that lists "broadcast": the step enums of the results
schema name planner steps, not table rows, and never list it).
"""
import glob
import json
import os
import re
import subprocess
import sys

# The one atomic write of the Python side (a temp file in the same folder, renamed into place).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calibrate", "python"))
from shardcal.formats import write_text_atomic  # noqa: E402

TABLE_FILE = os.path.join("calibrate", "python", "shardcal", "collectives.json")
# One-line enums in the schemas, e.g. "collective": {"enum": ["all_gather", ...]}.
ENUM = re.compile(r'"enum": \[([^\]]*)\]')


def table_of(shardbench):
    out = subprocess.run([shardbench, "info", "--collectives", "--json"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return json.loads(out), out


def name_enums(text):
    """(match, names) of every one-line enum in a schema text that lists collective names."""
    found = []
    for m in ENUM.finditer(text):
        names = json.loads("[" + m.group(1) + "]")
        if "broadcast" in names:
            found.append((m, names))
    return found


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check", "write"):
        sys.exit(__doc__)
    mode, shardbench, repo = sys.argv[1:]
    table, raw = table_of(shardbench)
    names = [row["name"] for row in table["collectives"]]
    problems = []

    path = os.path.join(repo, TABLE_FILE)
    with open(path, encoding="utf-8") as f:
        checked_in = json.load(f)
    if checked_in != table:
        if mode == "write":
            write_text_atomic(path, raw)
        else:
            problems.append(f"{TABLE_FILE} differs from `shardbench info --collectives --json`")

    schemas = sorted(glob.glob(os.path.join(repo, "configs", "schema", "*.schema.json")))
    if not schemas:
        problems.append("no configs/schema/*.schema.json found under " + repo)
    for schema in schemas:
        with open(schema, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(schema, repo)
        if '"all_gather"' in text and not name_enums(text):
            problems.append(f"{rel}: names collectives but has no one-line enum listing them")
        for m, listed in reversed(name_enums(text)):
            if listed == names:
                continue
            if mode == "write":
                text = text[:m.start(1)] + ", ".join(json.dumps(n) for n in names) + text[m.end(1):]
            else:
                problems.append(f"{rel}: collective enum {listed} is not the table {names}")
        if mode == "write":
            write_text_atomic(schema, text)

    for p in problems:
        print("collectives_table.py: " + p, file=sys.stderr)
    if problems:
        print(f"fix: python3 scripts/collectives_table.py write {shardbench} {repo}", file=sys.stderr)
        sys.exit(1)
    print(f"collective table: {len(names)} collectives; {TABLE_FILE} and "
          f"{len(schemas)} schemas agree with the C++ table ({mode})")


if __name__ == "__main__":
    main()
