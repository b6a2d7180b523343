"""formats/formats.json is what the Python readers take the formats from (the shardcal package
ships a copy): check that the copy is equal, that the report loader and the shardcal package
agree with it (the C++ side is checked by the unit test
FormatsTable), and that the link-class rule gives every worked example."""
import json
import os
import sys

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "reports"))
sys.path.insert(0, os.path.join(ROOT, "calibrate", "python"))

from shardcal_report import load  # noqa: E402
import shardcal.profile as sp  # noqa: E402

failures = []
with open(os.path.join(ROOT, "formats", "formats.json"), encoding="utf-8") as f:
    if json.load(f) != load.FORMATS:
        failures.append("calibrate/python/shardcal/formats.json differs from formats/formats.json: "
                        "copy formats/formats.json over it")
schemas = load.FORMATS["schemas"]
if (sp.SCHEMA, sp.VERSION) != (schemas["profile"]["schema"], schemas["profile"]["version"]):
    failures.append(f"shardcal.profile SCHEMA/VERSION {sp.SCHEMA}/{sp.VERSION} != formats.json "
                    f"{schemas['profile']}")
for ex in load.FORMATS["link_class"]["concurrent_groups"]["examples"]:
    got = load.concurrent_groups(ex["groups"], ex["hosts_spanned"], ex["n_hosts"])
    if got != ex["concurrent_groups"]:
        failures.append(f"concurrent_groups{ex} = {got}")
if failures:
    sys.exit("formats out of sync:\n  " + "\n  ".join(failures))
print("formats.json: schemas and link-class examples agree")
