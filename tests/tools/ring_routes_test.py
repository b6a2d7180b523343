#!/usr/bin/env python3
"""ring-routes (bench/tools/ring_routes.cpp) on make-platform's platforms of 16 hosts x 4 ranks
(tests/data/smpi-hosts/README.md: 25 GB/s NICs, 3 us end to end; the fat tree 4 hosts per leaf,
2 top switches): the longest route and smallest link share of every ring, against what the
platforms' construction says, and bad input (one error line, exit 2).

Usage: ring_routes_test.py RING_ROUTES SOURCE_DIR WORK_DIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)


def make_platform(src, work, name, *topo):
    out = os.path.join(work, name)
    subprocess.run(["/usr/bin/python3", os.path.join(src, "scripts/simulate/make-platform"),
                    "--hosts", "16", "--ranks-per-host", "4", "--intra-bw", "150", "--intra-lat", "1",
                    "--inter-bw", "25", "--inter-lat", "3", *topo, "--out", out],
                   check=True, capture_output=True)
    return out


def abc_zone(work, name, routes):
    """A Full zone of hosts a, b, c and one 1 us link, routing the given (src, dst) pairs
    (symmetric; ("a", "a"): a loopback route for a)."""
    hosts = "".join(f"<host id=\"{h}\" speed=\"1Gf\"/>" for h in "abc")
    routed = "".join(f"<route src=\"{a}\" dst=\"{b}\"><link_ctn id=\"l\"/></route>" for a, b in routes)
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("<?xml version='1.0'?>\n"
                "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                f"<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">{hosts}"
                f"<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>{routed}</zone></platform>\n")
    return path


TABLE_KEYS = {"format", "source", "hosts_order", "rings", "loopback_latency_us", "loopback_GBps"}


def table_on_stdout(tool, platform, hostfile):
    """ring-routes without --out: (the run, its stderr lines, the table parsed from stdout or {})."""
    r = run(tool, "--platform", platform, "--hostfile", hostfile)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    return r, r.stderr.splitlines(), doc


def rings(tool, platform, hostfile, label, order):
    out = os.path.join(os.path.dirname(hostfile), f"{label}.json")
    r = run(tool, "--platform", platform, "--hostfile", hostfile, "--out", out)
    check(r.returncode == 0 and r.stderr == "", f"{label}: exit {r.returncode}, stderr {r.stderr!r}")
    if r.returncode != 0:
        return {}
    doc = json.load(open(out))
    check(set(doc) <= TABLE_KEYS, f"{label}: keys {sorted(doc)}")
    check(doc["format"] == "shardcal-ring-routes/1", f"{label}: format {doc['format']!r}")
    sha = hashlib.sha256(open(platform, "rb").read()).hexdigest()
    check(doc["source"].startswith("SimGrid 3.") and doc["source"].endswith(
        f"Host::route_to on {os.path.realpath(platform)} (sha256 {sha})"), f"{label}: source {doc['source']!r}")
    check(doc["hosts_order"] == order, f"{label}: hosts_order {doc['hosts_order']}")
    check([x["hosts"] for x in doc["rings"]] == list(range(2, len(order) + 1)),
          f"{label}: rings for {[x['hosts'] for x in doc['rings']]}")
    # Without --out: the same document on stdout.
    r2 = run(tool, "--platform", platform, "--hostfile", hostfile)
    check(r2.returncode == 0 and json.loads(r2.stdout) == doc, f"{label}: stdout differs from --out")
    # Each step's route latency, the longest being the ring's; the loopback (1 us, make-platform's).
    for x in doc["rings"]:
        hops = x.get("hop_latency_us", [])
        check(len(hops) == x["hosts"] and max(hops, default=0) == x["latency_us"],
              f"{label}: {x['hosts']} hosts: hops {hops} for latency {x['latency_us']}")
    check(doc.get("loopback_latency_us") == 1.0, f"{label}: loopback {doc.get('loopback_latency_us')}")
    # and its bandwidth (make-platform's 150 GB/s): the eager chain's hops inside a host move at it.
    check(doc.get("loopback_GBps") == 150.0, f"{label}: loopback {doc.get('loopback_GBps')} GB/s")
    HOPS[label] = {x["hosts"]: x["hop_latency_us"] for x in doc["rings"]}
    # How far apart in route latency the flows on the most shared link are: 0 .. the longest route.
    for x in doc["rings"]:
        sk = x.get("share_skew_us", -1)
        check(0 <= sk <= x["latency_us"], f"{label}: {x['hosts']} hosts: share_skew_us {sk}")
    SKEW[label] = {x["hosts"]: x.get("share_skew_us") for x in doc["rings"]}
    return {x["hosts"]: (x["latency_us"], x["share_GBps"]) for x in doc["rings"]}


HOPS = {}  # label -> {hosts: hop latencies}
SKEW = {}  # label -> {hosts: share_skew_us}


def main():
    tool, src, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ft = make_platform(src, work, "fat-tree", "--topology", "fat-tree", "--hosts-per-switch", "4",
                       "--top-switches", "2")
    flat = make_platform(src, work, "flat", "--topology", "flat")
    index = [f"node-{i}" for i in range(16)]
    spread = [f"node-{i}" for i in (0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)]
    # The hostfile rules of host-series.sh: slots, comments, blank lines, duplicates once.
    spread_file = os.path.join(work, "spread.hosts")
    with open(spread_file, "w") as f:
        f.write("# spread over the leaves\n\n")
        for i, h in enumerate(spread):
            f.write(f"{h}:4  # leaf {i % 4}\n" if i % 2 else f"  {h}\n")
        f.write("node-0:4\n")

    # Fat tree, hosts in index order: one leaf (2 links x 0.75 us) up to 4 hosts, then across
    # leaves (4 links); every NIC and uplink carries one ring flow per direction.
    got = rings(tool, os.path.join(ft, "platform.xml"), os.path.join(ft, "hostfile"), "fat-tree", index)
    for h, (lat, share) in got.items():
        check(lat == (1.5 if h <= 4 else 3.0), f"fat-tree {h} hosts: latency {lat} us")
        check(share == 25.0, f"fat-tree {h} hosts: share {share} GB/s")
    # Hop by hop: inside a leaf 1.5 us; the steps from host 3 to 4 and from the last back to 0 cross.
    check(HOPS["fat-tree"].get(8) == [1.5, 1.5, 1.5, 3.0, 1.5, 1.5, 1.5, 3.0], f"fat-tree 8 hops {HOPS['fat-tree'].get(8)}")
    check(HOPS["fat-tree"].get(3) == [1.5, 1.5, 1.5], f"fat-tree 3 hops {HOPS['fat-tree'].get(3)}")
    # Spread order: every step crosses leaves; at 16 hosts 4 flows leave each leaf over 2 uplinks.
    got = rings(tool, os.path.join(ft, "platform.xml"), spread_file, "fat-tree-spread", spread)
    for h, (lat, share) in got.items():
        check(lat == 3.0, f"fat-tree spread {h} hosts: latency {lat} us")
    check(got.get(16, (0, 0))[1] == 12.5, f"fat-tree spread 16 hosts: share {got.get(16)}")
    check(got.get(2, (0, 0))[1] == 25.0, f"fat-tree spread 2 hosts: share {got.get(2)}")
    check(SKEW["fat-tree-spread"].get(16) == 0.0, f"fat-tree spread 16 hosts: skew {SKEW['fat-tree-spread'].get(16)}")
    # The checked-in dragonfly: from 9 hosts two ring flows share a global link; at 16 hosts their
    # routes take 3 and 4.5 us (tests/data/smpi-hosts/README.md).
    dfly = os.path.join(src, "tests", "data", "smpi-hosts", "dragonfly")
    dfly_hosts = os.path.join(work, "dragonfly.hosts")  # (rings() writes beside the hostfile)
    shutil.copyfile(os.path.join(dfly, "hostfile"), dfly_hosts)
    got = rings(tool, os.path.join(dfly, "platform.xml"), dfly_hosts, "dragonfly", index)
    check(got.get(8, (0, 0))[1] == 25.0 and SKEW["dragonfly"].get(8) == 0.0, f"dragonfly 8 hosts: {got.get(8)}")
    check(got.get(16, (0, 0))[1] == 12.5 and SKEW["dragonfly"].get(16) == 1.5,
          f"dragonfly 16 hosts: {got.get(16)}, skew {SKEW['dragonfly'].get(16)}")
    # Flat: NIC up (1.5 us) + FATPIPE backbone (0 us) + NIC down (1.5 us); one flow per NIC way.
    got = rings(tool, os.path.join(flat, "platform.xml"), os.path.join(flat, "hostfile"), "flat", index)
    for h, (lat, share) in got.items():
        check(lat == 3.0 and share == 25.0, f"flat {h} hosts: {lat} us, {share} GB/s")

    # A platform without loopback routes (a Full zone of hosts and links): the table, without
    # loopback_latency_us, and one warning line saying what it leaves out.
    no_loop = abc_zone(work, "noloop.xml", [("a", "b"), ("b", "c"), ("a", "c")])
    abc_loop = os.path.join(work, "abc-noloop.hosts")
    open(abc_loop, "w").write("a\nb\nc\n")
    r, lines, doc = table_on_stdout(tool, no_loop, abc_loop)
    check(r.returncode == 0 and len(lines) == 1 and lines[0].startswith("ring-routes: warning: ")
          and "no host has a loopback route" in lines[0]
          and set(doc) == TABLE_KEYS - {"loopback_latency_us", "loopback_GBps"}
          and [g.get("hosts") for g in doc.get("rings", [])] == [2, 3],
          f"no loopback: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:200]!r}")
    # One host of three with a loopback route (1 us): kept, and a warning that it is one of three.
    some = abc_zone(work, "someloop.xml", [("a", "b"), ("b", "c"), ("a", "c"), ("a", "a")])
    r, lines, doc = table_on_stdout(tool, some, abc_loop)
    check(r.returncode == 0 and len(lines) == 1 and "1 of 3 hosts have a loopback route" in lines[0]
          and "the longest of theirs" in lines[0] and doc.get("loopback_latency_us") == 1.0
          and doc.get("loopback_GBps") == 1.0 and set(doc) == TABLE_KEYS,
          f"some loopbacks: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:200]!r}")

    # Loopback routes of 0 latency (a cluster's loopback_lat="0us", as SimGrid's example
    # clusters), the table on stdout: pure JSON there, loopback_latency_us 0, no warning.
    loop0 = os.path.join(work, "loop0.xml")
    open(loop0, "w").write(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\"><cluster id=\"c\" prefix=\"node-\" "
        "suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\" loopback_bw=\"10GBps\" "
        "loopback_lat=\"0us\"/></zone></platform>\n")
    loop0_hosts = os.path.join(work, "loop0.hosts")
    open(loop0_hosts, "w").write("node-0\nnode-1\nnode-2\n")
    r, lines, doc = table_on_stdout(tool, loop0, loop0_hosts)
    check(r.returncode == 0 and not lines and set(doc) == TABLE_KEYS
          and doc.get("loopback_latency_us") == 0 and doc.get("loopback_GBps") == 10.0
          and len(doc.get("rings", [])) == 2,
          f"0-latency loopback: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:200]!r}")

    # Bad input: one line "ring-routes: error: ...", exit 2, nothing written.
    bad_hosts = os.path.join(work, "bad.hosts")
    open(bad_hosts, "w").write("node-0\nnode-99:4\n")
    one_host = os.path.join(work, "one.hosts")
    open(one_host, "w").write("node-3:4\n# node-4\nnode-3\n")
    broken = os.path.join(work, "broken.xml")
    open(broken, "w").write("<platform version='4.1'><zone id='w' routing='Full'>\n")
    bad_radicals = os.path.join(work, "radicals.xml")  # xbt_assert in SimGrid: abort()
    open(bad_radicals, "w").write(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\"><cluster id=\"c\" prefix=\"node-\" "
        "suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\" topology=\"TORUS\" "
        "topo_parameters=\"3,3\"/></zone></platform>\n")
    no_route = abc_zone(work, "noroute.xml", [("a", "b")])  # routing a -> b only
    abc = os.path.join(work, "abc.hosts")
    open(abc, "w").write("a\nb\nc\n")
    ft_xml, ft_hosts = os.path.join(ft, "platform.xml"), os.path.join(ft, "hostfile")
    out = os.path.join(work, "not-written.json")
    cases = [
        ("unknown host", [ft_xml, bad_hosts], "not hosts of"),
        ("one host", [ft_xml, one_host], "at least 2"),
        ("no platform", [os.path.join(work, "nope.xml"), ft_hosts], "no such file"),
        ("no hostfile", [ft_xml, os.path.join(work, "nope")], "no such file"),
        ("broken xml", [broken, ft_hosts], "SimGrid cannot load it"),
        ("simgrid abort", [bad_radicals, ft_hosts], "radicals"),
        ("no route", [no_route, abc], "no route from"),
    ]
    for label, (plat, hosts), words in cases:
        r = run(tool, "--platform", plat, "--hostfile", hosts, "--out", out)
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and len(lines) == 1 and lines[0].startswith("ring-routes: error: ")
              and words in lines[0] and r.stdout == "" and not os.path.exists(out),
              f"bad input ({label}): exit {r.returncode}, stderr {r.stderr!r}")
    r = run(tool, "--hostfile", ft_hosts)
    check(r.returncode == 2 and r.stderr.startswith("ring-routes: error: ") and len(r.stderr.splitlines()) == 1,
          f"no --platform: exit {r.returncode}, stderr {r.stderr!r}")

    if FAILS:
        print(f"{len(FAILS)} check(s) failed", file=sys.stderr)
        return 1
    print("ring-routes: fat tree (index, spread), flat and bad input as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
