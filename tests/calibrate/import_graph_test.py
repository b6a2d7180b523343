#!/usr/bin/env python3
"""The shardcal Python package has no import cycles (issue 45).

usage: import_graph_test.py PACKAGE_PARENT   (e.g. calibrate/python)

1. Static: every import statement of every module of the package, at any depth (inside
   functions too: a cycle hidden in a function is still a cycle), read with `ast`; the graph of
   package modules must have no cycle (no module imports one that imports it back, directly or
   through others). The checker itself is first run on a throw-away package with a cycle hidden
   in a function, which it must find.
2. Dynamic: each module imports alone, in a fresh interpreter, from PACKAGE_PARENT (not from an
   installed copy elsewhere).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile

PACKAGE = "shardcal"


def fail(msg: str) -> None:
    print(f"FAIL: {msg}")
    sys.exit(1)


def modules_of(pkg_dir: str) -> list:
    return sorted(f[:-3] for f in os.listdir(pkg_dir) if f.endswith(".py") and f != "__init__.py")


def imports_of(path: str, module: str, known: set) -> set:
    """Package modules that `module` (a file directly in the package) imports anywhere."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == PACKAGE and len(parts) > 1:
                    out.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
                fail(f"{path}:{node.lineno}: relative import beyond the package")
            if node.level == 1:
                base = node.module.split(".") if node.module else []
            elif node.module and node.module.split(".")[0] == PACKAGE:
                base = node.module.split(".")[1:]
            else:
                continue
            if base:  # from .x import y / from shardcal.x import y
                out.add(base[0])
            else:  # from . import x, y: each name that is a module
                out.update(a.name for a in node.names if a.name in known)
    out &= known
    out.discard(module)
    return out


def import_graph(pkg_dir: str) -> dict:
    mods = modules_of(pkg_dir)
    known = set(mods)
    return {m: imports_of(os.path.join(pkg_dir, m + ".py"), m, known) for m in mods}


def find_cycle(graph: dict):
    """A list of modules [a, b, ..., a] forming a cycle, or None."""
    state: dict = {}  # 1 on the stack, 2 done
    stack: list = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                c = visit(n)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


def self_check() -> None:
    """The checker finds a cycle hidden in a function, through `from . import`, and `import
    shardcal.x`; and none in an acyclic package."""
    with tempfile.TemporaryDirectory() as d:
        files = {
            "a.py": "from . import b\n",
            "b.py": "def f():\n    from .c import g\n    return g\n",
            "c.py": "import json\n\nclass K:\n    def m(self):\n        import shardcal.a\n",
            "d.py": "from .a import x\n",
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write(text)
        g = import_graph(d)
        if g != {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}:
            fail(f"self-check: import graph {g}")
        c = find_cycle(g)
        if not c or set(c) != {"a", "b", "c"}:
            fail(f"self-check: the cycle a -> b -> c -> a was not found (got {c})")
        os.remove(os.path.join(d, "c.py"))
        if find_cycle(import_graph(d)) is not None:
            fail("self-check: a cycle reported in an acyclic package")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    parent = os.path.abspath(sys.argv[1])
    pkg_dir = os.path.join(parent, PACKAGE)
    if not os.path.isfile(os.path.join(pkg_dir, "__init__.py")):
        print(f"error: {pkg_dir} is not the {PACKAGE} package", file=sys.stderr)
        return 2
    self_check()

    graph = import_graph(pkg_dir)
    cycle = find_cycle(graph)
    if cycle:
        fail("import cycle: " + " -> ".join(cycle) +
             " (move what both need into a module that both import)")
    for m, deps in sorted(graph.items()):
        print(f"{m}: {', '.join(sorted(deps)) or '-'}")

    env = dict(os.environ, PYTHONPATH=parent + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for m in modules_of(pkg_dir):
        code = (f"import {PACKAGE}.{m} as mod, os; "
                f"assert os.path.dirname(os.path.abspath(mod.__file__)) == {pkg_dir!r}, mod.__file__")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"`import {PACKAGE}.{m}` alone failed:\n{r.stderr.strip()}")
    print(f"OK: {len(graph)} modules, no import cycle, each imports alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
