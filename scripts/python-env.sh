#!/usr/bin/env bash
# scripts/python-env.sh - the project's Python environment: a venv (default .venv) made from
# Debian's /usr/bin/python3 with --system-site-packages (so python3-matplotlib, numpy, scipy and
# jsonschema from scripts/setup.sh stay importable), with the shardcal package
# (calibrate/python) installed into it. Called by scripts/run.sh and scripts/test.sh; re-running
# is safe and, without --torch, offline and a few seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  cat <<'USAGE'
Usage: bash scripts/python-env.sh [--venv DIR] [--torch] [--help]

Creates the venv DIR (default: .venv in the repository, env SHARDCAL_VENV) from /usr/bin/python3
with --system-site-packages when it does not exist, and installs calibrate/python into it
(editable, no build isolation, no index: setuptools comes from Debian's python3-setuptools).
Tests and reports run with DIR/bin/python.

  --venv DIR  the venv directory
  --torch     also install the package's `torch` extra (torch from PyPI with its nvidia-* wheels,
              several GB): needed by the DTensor adapter's tests. The wheels are downloaded once
              into SHARDCAL_WHEELS (default ~/.cache/shardcal/wheels; pip's own HTTP cache is not
              reliably filled) and installed from there offline on later runs
  --help      show this help
USAGE
}

VENV=${SHARDCAL_VENV:-$ROOT/.venv}
TORCH=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) [[ $# -ge 2 && -n $2 ]] || { echo "python-env.sh: --venv needs a value" >&2; exit 2; }
            VENV=$2; shift ;;
    --torch) TORCH=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "python-env.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BASE=/usr/bin/python3
if [[ ! -x $BASE ]]; then
  echo "python-env.sh: $BASE not found: run bash scripts/setup.sh first" >&2
  exit 1
fi
PY=$VENV/bin/python
# A venv whose interpreter no longer runs (Debian's python3 upgraded or removed) is rebuilt.
if [[ ! -x $PY ]] || ! "$PY" -c 'import sys' >/dev/null 2>&1; then
  echo "python-env.sh: creating $VENV (from $BASE, --system-site-packages)"
  rm -rf "$VENV"
  "$BASE" -m venv --system-site-packages "$VENV"
fi
PIP=("$PY" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --no-build-isolation --no-deps --no-index -e ./calibrate/python
if [[ $TORCH == 1 ]]; then
  # The version range is the package's `torch` extra (calibrate/python/pyproject.toml); pip
  # leaves an installed torch alone when it satisfies it.
  spec=$("$PY" -c 'import tomllib; print(tomllib.load(open("calibrate/python/pyproject.toml", "rb"))["project"]["optional-dependencies"]["torch"][0])')
  wheels=${SHARDCAL_WHEELS:-$HOME/.cache/shardcal/wheels}
  t=$SECONDS
  # Offline first (also a no-op when an installed torch satisfies the range); else download.
  if ! "${PIP[@]}" install -q --no-index --find-links "$wheels" "$spec" 2>/dev/null; then
    mkdir -p "$wheels"
    echo "python-env.sh: downloading $spec and its dependencies from PyPI into $wheels"
    "${PIP[@]}" download -q -d "$wheels" "$spec"
    "${PIP[@]}" install -q --no-index --find-links "$wheels" "$spec"
  fi
  echo "python-env.sh: $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null) ($((SECONDS - t))s)"
fi
echo "python-env.sh: $PY has shardcal $("$PY" -c 'import shardcal; print(shardcal.__version__)')"
