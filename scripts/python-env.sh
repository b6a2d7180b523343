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
# The offline editable install builds with the venv's setuptools (Debian's 66 needs wheel too).
if ! missing=$("$PY" -c '
import importlib.util
print(" ".join(m for m in ("pip", "setuptools", "wheel") if importlib.util.find_spec(m) is None))') || [[ -n $missing ]]; then
  echo "python-env.sh: $PY cannot import: ${missing:-pip/setuptools/wheel (python failed)}; the offline install of" \
       "calibrate/python needs them: apt-get install python3-setuptools python3-wheel (bash scripts/setup.sh does)," \
       "or remove $VENV if it was not made with --system-site-packages" >&2
  exit 1
fi
# The editable install compiles the package's C++ core, shardcal._core (the C++ cost model and the
# DTensor plan search, from calibrate/src, core/src and formats/src; ~70 s on 2 idle cores; see
# calibrate/python/setup.py): skipped outside CI when this checkout is what the venv imports and the
# built module is newer than every source and build file it is made from.
so=$(compgen -G "calibrate/python/shardcal/_core.cpython-*.so" | head -n 1 || true)
if [[ ${CI:-} != true && -n $so &&
      -z $(find calibrate/python/shardcal calibrate/python/setup.py calibrate/python/pyproject.toml calibrate/src \
             calibrate/include core/src core/include formats/src formats/include \( -name '*.cpp' -o -name '*.hpp' \
             -o -name '*.py' -o -name '*.toml' \) -newer "$so" -print -quit) ]] &&
   "$PY" -c 'import os, sys, shardcal._core as m
sys.exit(os.path.realpath(m.__file__) != os.path.realpath(sys.argv[1]))' "$so" 2>/dev/null; then
  :
else
  rm -f calibrate/python/shardcal/_core.cpython-*.so  # a failed build leaves no stale one
  if ! "${PIP[@]}" install -q --no-build-isolation --no-deps --no-index -e ./calibrate/python; then
    echo "python-env.sh: building shardcal._core (calibrate/python/setup.py) failed (the compiler's error above):" \
         "the package prices through it and does not work without it. It needs g++, python3-dev, pybind11-dev" \
         "and nlohmann-json3-dev (bash scripts/setup.sh installs them)" >&2
    exit 1
  fi
fi
if ! err=$("$PY" -c 'import shardcal.profile' 2>&1); then
  echo "python-env.sh: the installed package does not import: $err" >&2
  exit 1
fi
if [[ $TORCH == 1 ]]; then
  # The version range is the package's `torch` extra (calibrate/python/pyproject.toml); pip
  # leaves an installed torch alone when it satisfies it.
  spec=$("$PY" -c 'import tomllib; print(tomllib.load(open("calibrate/python/pyproject.toml", "rb"))["project"]["optional-dependencies"]["torch"][0])')
  wheels=${SHARDCAL_WHEELS:-$HOME/.cache/shardcal/wheels}
  t=$SECONDS
  # Offline first (also a no-op when an installed torch satisfies the range); else download.
  err=$(mktemp)
  trap 'rm -f "$err"' EXIT
  if ! "${PIP[@]}" install -q --no-index --find-links "$wheels" "$spec" 2>"$err"; then
    if compgen -G "$wheels/*.whl" >/dev/null; then
      # Cached wheels that do not install (a truncated download, a corrupt file, a missing
      # dependency): say why, then fetch them again once, past every cache, and replace them.
      echo "python-env.sh: installing $spec from the cached wheels in $wheels failed:" >&2
      cat "$err" >&2
      echo "python-env.sh: downloading them again from PyPI (bypassing pip's cache) to replace the cache" >&2
      fresh="$wheels.new"
      rm -rf "$fresh"
      mkdir -p "$fresh"
      if ! "${PIP[@]}" download -q --no-cache-dir -d "$fresh" "$spec" ||
         ! "${PIP[@]}" install -q --no-index --find-links "$fresh" "$spec"; then
        echo "python-env.sh: installing $spec failed even from freshly downloaded wheels ($fresh, errors above)" >&2
        exit 1
      fi
      rm -rf "$wheels"
      mv "$fresh" "$wheels"
    else
      mkdir -p "$wheels"
      echo "python-env.sh: downloading $spec and its dependencies from PyPI into $wheels"
      "${PIP[@]}" download -q -d "$wheels" "$spec"
      "${PIP[@]}" install -q --no-index --find-links "$wheels" "$spec"
    fi
  fi
  echo "python-env.sh: $("$PY" -c 'import torch; print("torch", torch.__version__)') ($((SECONDS - t))s)"
fi
echo "python-env.sh: $PY has shardcal $("$PY" -c 'import shardcal; print(shardcal.__version__)')"
