"""What the repository's scripts (bench/scripts, calibrate/scripts, scripts/) share: bad input is
one line on stderr and exit 2, never a traceback. Standard library only; the scripts put
calibrate/python on sys.path, so Debian's /usr/bin/python3 runs them without the package installed.

    die, read_text = helpers("my_script.py")
"""

from __future__ import annotations

import sys


def helpers(prog: str):
    """(die, read_text) that name `prog` in their message."""

    def die(msg: str):
        print(f"{prog}: {msg}", file=sys.stderr)
        sys.exit(2)

    def read_text(path: str) -> str:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            die(f"cannot read {path}: {e.strerror}")

    return die, read_text
