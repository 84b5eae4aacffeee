"""Host-only: scripts/fuzz.sh runs a fuzz target for a time, in one or more jobs, and
prints executions and crashes. A fake libFuzzer binary stands in for the real ones
(which need clang builds): it prints libFuzzer's progress and final-stats lines and,
when told, reports a sanitizer error and keeps its input as libFuzzer does."""

import os
import re
import subprocess

import pytest

from peach2_testlib import REPO

FUZZ_SH = os.path.join(REPO, "scripts", "fuzz.sh")

FAKE_FUZZER = r"""#!/usr/bin/env bash
# Fake libFuzzer: $FAKE_EXECS executions, a crash if $FAKE_CRASH is set.
prefix= seconds=0
for a in "$@"; do
  case $a in
    -artifact_prefix=*) prefix=${a#-artifact_prefix=} ;;
    -max_total_time=*) seconds=${a#-max_total_time=} ;;
  esac
done
echo "round of $seconds s" >>"${FAKE_ROUNDS:-/dev/null}"

echo "INFO: Seed: 1"
echo "#2	INITED cov: 10 ft: 10 corp: 1/1b exec/s: 0 rss: 30Mb"
if [ -n "${FAKE_CRASH:-}" ]; then
  echo "==$$==ERROR: AddressSanitizer: heap-buffer-overflow"
  echo "SUMMARY: AddressSanitizer: heap-buffer-overflow"
  echo crash >"${prefix}crash-$$"
  exit 1
fi
sleep "$seconds"
echo "#${FAKE_EXECS}	DONE   cov: 10 ft: 10 corp: 1/1b exec/s: ${FAKE_EXECS} rss: 30Mb"
echo "stat::number_of_executed_units: ${FAKE_EXECS}"
echo "stat::peak_rss_mb: 30"
"""


@pytest.fixture
def build(tmp_path):
    fuzzer = tmp_path / "core-fuzz" / "peach2-core-fuzz"
    fuzzer.parent.mkdir()
    fuzzer.write_text(FAKE_FUZZER)
    fuzzer.chmod(0o755)
    return tmp_path


def _fuzz(build, *args, **env):
    full_env = dict(os.environ, PEACH2_BUILD=str(build), FUZZ_NICE="0", **env)
    return subprocess.run([FUZZ_SH, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=full_env, timeout=60)


def _row(out, target):
    m = re.search(rf"^{target}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M)
    assert m, out
    seconds, execs, rate, crashes, _units = map(int, m.groups())
    return seconds, execs, crashes


def test_one_job_reports_its_executions(build):
    r = _fuzz(build, "-t", "1", "--fresh", "core", FAKE_EXECS="1234")
    assert r.returncode == 0, r.stdout
    assert _row(r.stdout, "core")[1:] == (1234, 0)
    assert (build / "fuzz" / "core.log").read_text().count("number_of_executed_units") == 1


def test_jobs_run_at_once_and_their_executions_add_up(build):
    r = _fuzz(build, "-t", "1", "-j", "3", "--fresh", "core", FAKE_EXECS="1000")
    assert r.returncode == 0, r.stdout
    assert "in 3 jobs" in r.stdout
    assert _row(r.stdout, "core")[1:] == (3000, 0)
    for j in (1, 2, 3):
        assert "DONE" in (build / "fuzz" / f"core.{j}.log").read_text()
    # The target's log holds every job's, for the sanitizer scan.
    assert (build / "fuzz" / "core.log").read_text().count("number_of_executed_units") == 3


def test_long_runs_go_in_rounds_of_fresh_jobs_and_add_up(build, tmp_path):
    rounds = tmp_path / "rounds"
    r = _fuzz(build, "-t", "3", "-r", "1", "-j", "2", "--fresh", "core", FAKE_EXECS="100",
              FAKE_ROUNDS=str(rounds))
    assert r.returncode == 0, r.stdout
    started = rounds.read_text().splitlines()
    # Two jobs per round, rounds of 1 s while the 3 s last.
    assert len(started) in (4, 6) and set(started) == {"round of 1 s"}, started
    assert _row(r.stdout, "core")[1] == 100 * len(started)
    # Every round's log is kept in the target's.
    log = (build / "fuzz" / "core.log").read_text()
    assert log.count("number_of_executed_units") == len(started)


def test_a_crash_ends_the_rounds(build, tmp_path):
    rounds = tmp_path / "rounds"
    r = _fuzz(build, "-t", "5", "-r", "1", "--fresh", "core", FAKE_CRASH="1",
              FAKE_ROUNDS=str(rounds))
    assert r.returncode == 1, r.stdout
    assert len(rounds.read_text().splitlines()) == 1


def test_a_crash_in_any_job_fails_the_run_and_keeps_the_input(build):
    r = _fuzz(build, "-t", "1", "-j", "2", "--fresh", "core", FAKE_CRASH="1", FAKE_EXECS="5")
    assert r.returncode == 1, r.stdout
    assert "core: FAILED" in r.stdout and "AddressSanitizer" in r.stdout
    kept = list((build / "fuzz" / "crashes" / "core").iterdir())
    assert len(kept) == 2 and _row(r.stdout, "core")[2] == 2


@pytest.mark.parametrize("jobs", ["0", "two", "-1"])
def test_a_bad_job_count_is_refused(build, jobs):
    r = _fuzz(build, "-t", "1", "-j", jobs, "core")
    assert r.returncode != 0
    assert "-j wants a number of jobs" in r.stdout


def test_a_bad_round_is_refused(build):
    r = _fuzz(build, "-t", "1", "-r", "0", "core")
    assert r.returncode != 0
    assert "-r wants whole seconds" in r.stdout
