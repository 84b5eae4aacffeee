#!/bin/sh
# peach2-model from the command line: a report for a run's traces, and clear
# errors (exit 2) for what is not one. Usage: cli_test.sh PATH/TO/peach2-model
set -u
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

check() { # check NAME EXPECTED_STATUS PATTERN -- COMMAND...
    name=$1 want=$2 pattern=$3
    shift 4
    out=$("$@" 2>&1)
    got=$?
    if [ "$got" -ne "$want" ] || ! printf '%s' "$out" | grep -q -- "$pattern"; then
        echo "FAIL $name: exit $got (want $want), output:"
        printf '%s\n' "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok   $name"
    fi
}

check example 0 "wrote" -- "$tool" --write-example "$dir/run"
check report 0 "Whole run on PEACH2 (predicted)" -- "$tool" "$dir/run"
check report-ops 0 "get " -- "$tool" "$dir/run" --ops-csv "$dir/ops.csv"
check ops-csv 0 "^op,kind,node,peer,bytes" -- head -1 "$dir/ops.csv"
check summary 0 "" -- "$tool" "$dir/run" --summary-csv "$dir/summary.csv"
check summary-csv 0 "^DMA run,host,1048576,1," -- cat "$dir/summary.csv"
check profile 0 "profile 2013" -- "$tool" --profile 2013 "$dir/run"
check calibration 0 "read-proxy get" -- "$tool" --calibration
check calibration-csv 0 "^id,what,source" -- "$tool" --calibration --csv
check curves 0 "^series,bytes,latency_us,gbps" -- "$tool" --curves
check print-params 0 "dma.start_chain_ns = 504" -- "$tool" --print-params

mkdir "$dir/empty"
check no-traces 2 "no \*.p2trace files" -- "$tool" "$dir/empty"
printf 'not a trace at all\n' >"$dir/text.p2trace"
check foreign 2 "not a PEACH2 trace" -- "$tool" "$dir/text.p2trace"
size=$(wc -c <"$dir/run/node0.p2trace")
head -c $((size - 100)) "$dir/run/node0.p2trace" >"$dir/cut.p2trace"
check truncated 2 "truncated: the last record has" -- "$tool" "$dir/cut.p2trace"
check partial 0 "Whole run on PEACH2" -- "$tool" --partial "$dir/cut.p2trace"
check bad-profile 2 "no profile \`1999\`" -- "$tool" --profile 1999 "$dir/run"
printf 'link.raw_gbps = 4\nlink.bogus = 1\n' >"$dir/bad.params"
check bad-params 2 "bad.params:2: unknown parameter" -- "$tool" --params "$dir/bad.params" "$dir/run"
check bad-scale 2 "host-scale needs a number" -- "$tool" --host-scale x "$dir/run"
check no-args 2 "usage:" -- "$tool"

[ "$failures" -eq 0 ] || { echo "$failures CLI checks failed"; exit 1; }
echo "all CLI checks passed"
