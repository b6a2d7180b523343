# scripts/emulate/common.sh - sourced by the *-two-hosts.sh scripts: their argument loop, checks,
# and the emulated cluster's start with the trap that stops it. The caller sets PROG (its name in
# messages), its option defaults, and OPTS (option -> variable name) before parse_options.
# shellcheck shell=bash

die() { echo "$PROG: $*" >&2; exit 2; }

# parse_options "$@": every option in OPTS takes one non-empty value; -h/--help runs usage.
parse_options() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h | --help) usage; exit 0 ;;
    esac
    [[ -n ${OPTS[$1]+x} ]] || die "unknown option '$1' (see --help)"
    [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"
    printf -v "${OPTS[$1]}" '%s' "$2"
    shift 2
  done
}

# need_shardbench [COMMAND...]: SB=$BUILD_DIR/bin/shardbench exists and has each command.
need_shardbench() {
  SB=$BUILD_DIR/bin/shardbench
  [[ -x $SB ]] || die "$SB not found: build it first (cmake --build $BUILD_DIR --target shardbench)"
  local c
  for c in "$@"; do
    "$SB" "$c" --help >/dev/null 2>&1 || die "this shardbench has no '$c' command: build a tree that has it"
  done
}

need_file() { [[ -f $2 ]] || die "$1 $2 not found"; }
need_root() { [[ $(id -u) == 0 ]] || die "needs root (network namespaces): run as root or with sudo"; }
# check_rate WHAT RATE: a tc rate such as 200mbit.
check_rate() {
  [[ $2 =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit)$ ]] || die "$1: '$2' is not a tc rate (e.g. 200mbit)"
}

# emu_start RATE: the emulated cluster NAME at RATE (EMU: its command), OUT made; stopped on exit,
# also on failure or Ctrl-C.
emu_start() {
  EMU=(scripts/emulate/two-hosts --name "$NAME")
  mkdir -p "$OUT"
  "${EMU[@]}" --rate "$1" start
  trap '"${EMU[@]}" stop >/dev/null || echo "$PROG: WARNING: stop failed; run ${EMU[*]} stop" >&2' EXIT
  trap 'exit 130' INT TERM
}

# Runs "$@" in the background and waits for it: bash runs a trap only between foreground
# commands, so a TERM/INT is handled at once (exit 130; the EXIT trap stops the instance, which
# kills what runs inside it) rather than after a sweep of minutes.
in_bg() { "$@" & wait $!; }
