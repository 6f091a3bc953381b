#!/usr/bin/env bash
# Runs one libFuzzer target for a while: fuzz/run.sh BUILD_DIR TARGET SECONDS.
# The checked-in seeds (fuzz/corpus/TARGET) are read, never written: what the
# fuzzer finds goes to BUILD_DIR/fuzz-work/TARGET/corpus, and a crashing (or
# hanging, or leaking) input to BUILD_DIR/fuzz-work/TARGET/crashes, where it
# stays. Exits non-zero on a crash.
#
# Every target runs under bubblewrap with the host read-only and a private
# /tmp: the import targets unpack hostile tars as root, and a layer that
# escaped its rootfs must meet a read-only file system, not the host.
set -euo pipefail
build=$(realpath "$1") target=$2 seconds=$3
src=$(realpath "$(dirname "$0")")
binary=$build/fuzz/fuzz_$target
seeds=$src/corpus/$target
work=$build/fuzz-work/$target
mkdir -p "$work/corpus" "$work/crashes"
[[ -x $binary ]] || { echo "fuzz: $binary is not built (ninja -C $1 fuzz_targets)" >&2; exit 2; }
[[ -d $seeds ]] || { echo "fuzz: no seed corpus in $seeds: add a few valid inputs" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "fuzz: bwrap is missing (make deps installs bubblewrap)" >&2; exit 2; }

# Tokens the inputs are made of (fuzz/dict/TARGET.dict), when there are any.
extra=()
[[ -f $src/dict/$target.dict ]] && extra+=(-dict="$src/dict/$target.dict")

log=$work/log
status=0
# The binary and seeds are bound back after the private /tmp, which would
# hide a checkout that lives under /tmp.
bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
  --ro-bind "$build/fuzz" "$build/fuzz" --ro-bind "$src" "$src" --bind "$work" "$work" \
  --unshare-pid --die-with-parent \
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/crashes/" -print_final_stats=1 "${extra[@]}" \
  "$work/corpus" "$seeds" >"$log" 2>&1 || status=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
if ((status != 0)); then
  grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 >&2 || true
  echo "fuzz_$target: FAILED (exit $status) after ${runs:-?} runs; input kept in $work/crashes/," \
    "full log in $log; replay (the host read-only, as here):" \
    "bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --ro-bind $build/fuzz $build/fuzz" \
    "--ro-bind $src $src --bind $work $work" \
    "$binary $work/crashes/<file>" >&2
  ls -1 "$work/crashes" >&2
  exit 1
fi
echo "fuzz_$target: ${seconds} s, ${runs:-?} runs, $(ls "$work/corpus" | wc -l) inputs in the working corpus, no crash"
