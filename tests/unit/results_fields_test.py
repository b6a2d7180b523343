#!/usr/bin/env python3
"""The results reader is typed from the writer's field list (issue 45): formats/src/results_fields.hpp
checks every field the reader reads against formats/formats.json "results_point" at compile time.

usage: results_fields_test.py CXX SOURCE_DIR

Compiles a probe that reads one field the way results_reader.cpp does, against the table
cmake/ResultsFields.cmake generates from formats.json:
- a listed field of the right kind and type compiles; one the list lacks, one the list says its
  kind does not have, and one read as another type do not (with the reason);
- a field added to a copy of the list (the writer's side: the unit test ResultsRecord holds the
  writer to the list) is seen by the reader: the probe reading it compiles, and fails without it.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

CXX, SRC = sys.argv[1], os.path.abspath(sys.argv[2])
TMP = tempfile.mkdtemp(prefix="results_fields_")
fails = 0

PROBE = """#include "results_fields.hpp"
namespace rf = shardcal::formats::results_fields;
constexpr rf::Field f = rf::field(rf::List::{list}, rf::Kind::{kind}, "{name}", "{types}");
int main() {{ return f.name[0] == 0; }}
"""


def generate(formats_json, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run(["cmake", f"-DJSON={formats_json}", f"-DOUT={out_dir}/results_fields_table.inc", "-P",
                    os.path.join(SRC, "cmake", "ResultsFields.cmake")], check=True)


def compiles(gen_dir, list_, kind, name, types):
    src = os.path.join(TMP, "probe.cpp")
    with open(src, "w") as f:
        f.write(PROBE.format(list=list_, kind=kind, name=name, types=types))
    r = subprocess.run([CXX, "-std=c++20", "-fsyntax-only", "-I", os.path.join(SRC, "formats", "src"),
                        "-I", gen_dir, src], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def expect(gen_dir, ok, needle, *probe):
    global fails
    got, err = compiles(gen_dir, *probe)
    good = got == ok and (ok or needle in err)
    print(f"{'ok  ' if good else 'FAIL'} {probe}: {'compiles' if got else 'does not compile'}"
          + ("" if ok else f" ({needle!r} {'in' if needle in err else 'NOT in'} the error)"))
    if not good:
        fails += 1
        print(err[-2000:])


real = os.path.join(TMP, "real")
generate(os.path.join(SRC, "formats", "formats.json"), real)
expect(real, True, "", "Fields", "Collective", "group_size", "integer")
expect(real, True, "", "Fields", "Any", "wrong", "integer|null")
expect(real, True, "", "Point", "Collective", "mesh_dim", "integer")
expect(real, True, "", "Context", "Any", "n_hosts", "integer")
expect(real, False, "not in formats/formats.json", "Fields", "Collective", "probe_field", "integer")
expect(real, False, "absent for this kind", "Fields", "Transition", "collective", "collective")
expect(real, False, "not what the reader reads", "Fields", "Collective", "bytes", "string")
expect(real, False, "not in formats/formats.json", "Context", "Any", "group_size", "integer")

# A field added to the list: the reader sees it (and its least value).
doc = json.load(open(os.path.join(SRC, "formats", "formats.json")))
doc["results_point"]["fields"].append(["probe_field", "integer", "absent", 3])
added = os.path.join(TMP, "formats.json")
json.dump(doc, open(added, "w"))
gen = os.path.join(TMP, "added")
generate(added, gen)
expect(gen, True, "", "Fields", "Collective", "probe_field", "integer")
expect(gen, False, "absent for this kind", "Fields", "Transition", "probe_field", "integer")
if '{"probe_field", "integer", "absent", 3}' not in open(os.path.join(gen, "results_fields_table.inc")).read():
    print("FAIL the generated row of probe_field lacks its least value 3")
    fails += 1

shutil.rmtree(TMP)
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
