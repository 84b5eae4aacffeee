#!/usr/bin/env bash
# Run the fuzzers (docs/fuzzing.md) for a given time each and print, per
# target, executions, exec/s and crashes. Exits 1 if any target crashed; the
# crashing inputs stay in $PEACH2_BUILD/fuzz/crashes/TARGET/.
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [-r ROUND] [--fresh] [TARGET...]
# Targets: core (peach2-core-fuzz, `make core-fuzz`) and generic-peach2
# (QEMU's generic-fuzz, scripts/build-qemu-fuzz.sh); default: both.
# Each starts from the repository's corpus (qemu-device/fuzz/corpus/TARGET)
# plus what earlier runs found ($PEACH2_BUILD/fuzz/corpus/TARGET; --fresh
# uses none of it and keeps nothing). -j runs JOBS copies of each target at
# once on one corpus (libFuzzer reloads it: each sees what the others find);
# the table sums them. A job runs at most ROUND seconds (default 300), then a
# fresh one goes on from the corpus: QEMU's generic-fuzz forks its whole
# process for every input, and that process grows (~480 MB after 45 min),
# which took it from 125 to 17 executions per second. The fuzzers run at
# nice ${FUZZ_NICE:-10}.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

seconds=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-1}
round=${FUZZ_ROUND_SECONDS:-300}
fresh=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    -t) seconds=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -r) round=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(core generic-peach2)
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || die "-t wants whole seconds, got '$seconds'"
[[ $jobs =~ ^[0-9]+$ ]] && [ "$jobs" -gt 0 ] || die "-j wants a number of jobs, got '$jobs'"
[[ $round =~ ^[0-9]+$ ]] && [ "$round" -gt 0 ] || die "-r wants whole seconds, got '$round'"

FUZZ_DIR=$PEACH2_TOP/qemu-device/fuzz
OUT=$PEACH2_BUILD/fuzz
# Sanitizer reports end the run (QEMU's UBSan would only print); no leak
# check in QEMU's fork-server children, which _Exit.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# A run (one input) taking longer than this is a hang: kept as timeout-*.
TIMEOUT=25

# The command line of a target, after "--": its binary and its own flags.
target_cmd() {
  case $1 in
    core)
      [ -x "$PEACH2_BUILD/core-fuzz/peach2-core-fuzz" ] || die "no peach2-core-fuzz: run make core-fuzz"
      echo "$PEACH2_BUILD/core-fuzz/peach2-core-fuzz -dict=$FUZZ_DIR/core.dict -rss_limit_mb=2048" ;;
    generic-peach2)
      [ -x "$PEACH2_BUILD/qemu-fuzz-x86_64" ] || die "no qemu-fuzz-x86_64: run scripts/build-qemu-fuzz.sh"
      echo "$PEACH2_BUILD/qemu-fuzz-x86_64 --fuzz-target=generic-fuzz-peach2 -rss_limit_mb=4096" ;;
    *) die "unknown fuzz target '$1' (core, generic-peach2)" ;;
  esac
}

status=0
rows=()
for t in "${targets[@]}"; do
  read -r -a cmd <<<"$(target_cmd "$t")"
  work=$OUT/corpus/$t
  [ $fresh -eq 1 ] && work=$OUT/fresh-corpus/$t && rm -rf "$work"
  crashes=$OUT/crashes/$t
  mkdir -p "$work" "$crashes" "$FUZZ_DIR/corpus/$t"
  log=$OUT/$t.log
  before=$(find "$crashes" -type f | wc -l)
  say "$t: fuzzing for $seconds s$([ "$jobs" -gt 1 ] && echo " in $jobs jobs") (log: $log)"
  start=$(date +%s)
  : >"$log"
  rc=0 execs=0
  # Rounds of at most $round s until the time is up, a job fails or an
  # input crashed (generic-fuzz's parent goes on after a child's crash).
  while left=$(( seconds - ($(date +%s) - start) )); [ "$left" -gt 0 ] && [ "$rc" -eq 0 ] &&
    [ "$(find "$crashes" -type f | wc -l)" -eq "$before" ]; do
    this=$(( left < round ? left : round ))
    logs=() pids=()
    for ((j = 1; j <= jobs; j++)); do
      jlog=$OUT/$t.$j.log
      logs+=("$jlog")
      # libFuzzer writes new inputs into the first corpus directory only.
      ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=$([ "$t" = core ] && echo 1 || echo 0)} \
        nice -n "${FUZZ_NICE:-10}" "${cmd[@]}" -max_total_time="$this" -timeout=$TIMEOUT \
        -print_final_stats=1 -artifact_prefix="$crashes/" "$work" "$FUZZ_DIR/corpus/$t" \
        >"$jlog" 2>&1 &
      pids+=($!)
    done
    # Progress each minute: libFuzzer's last "#N" line of each job (it prints
    # at new coverage and at powers of two, so this is a lower bound).
    now=$(date +%s)
    next=$(( start + ((now - start) / 60 + 1) * 60 ))  # the next whole minute of the run
    while sleep 0.2 && kill -0 "${pids[@]}" 2>/dev/null; do
      [ "$(date +%s)" -ge $next ] || continue
      next=$(( next + 60 ))
      seen=$(for l in "${logs[@]}"; do grep -aoE '^#[0-9]+' "$l" | tail -n1 | tr -d '#'; done \
        | awk -v n="$execs" '{n += $1} END {print n + 0}')
      say "$t: $(( $(date +%s) - start )) of $seconds s, at least $seen executions"
    done
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    cat "${logs[@]}" >>"$log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${logs[@]}" \
      | awk -v n="$execs" '{n += $1} END {print n + 0}')
  done
  elapsed=$(( $(date +%s) - start ))
  found=$(( $(find "$crashes" -type f | wc -l) - before ))
  # QEMU's generic-fuzz runs every input in a forked child: the parent goes
  # on after a child's crash (the child saved it), so the log says it too.
  reports=$(grep -cE '^==[0-9]+==ERROR: |runtime error: |^SUMMARY: ' "$log" || true)
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ] || [ "$reports" -gt 0 ]; then
    status=1
    say "$t: FAILED (exit $rc, $found new input(s) in $crashes, $reports sanitizer line(s) in $log)"
    grep -m5 -E '^==[0-9]+==ERROR: |runtime error: |^SUMMARY: |invariant broken' "$log" >&2 || true
  fi
  rows+=("$(printf '%-16s %8s %12s %9s %8s %8s' "$t" "$elapsed" "$execs" \
    "$(( execs / (elapsed > 0 ? elapsed : 1) ))" "$found" "$(find "$work" -type f | wc -l)")")
done

printf '%-16s %8s %12s %9s %8s %8s\n' target seconds executions exec/s crashes new-units
printf '%s\n' "${rows[@]}"
printf 'load: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
