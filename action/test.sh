#!/usr/bin/env bash
# Tests action/run.sh, the GitHub Action's run step, on this machine: runs
# it on tiny commands with the runner's files (GITHUB_OUTPUT,
# GITHUB_STEP_SUMMARY, RUNNER_TEMP) pointed at temp files, and checks its
# exit code, outputs, summary, annotations and JUnit report. Needs what
# writewatch needs: root, or CAP_BPF and CAP_PERFMON.
#
# Usage: action/test.sh path/to/writewatch
set -uo pipefail

ww=$(realpath "${1:?usage: action/test.sh path/to/writewatch}")
here=$(cd "$(dirname "$0")" && pwd)
# Outside /tmp, which the default allowlist allows.
work=$(mktemp -d /var/tmp/writewatch-action-test.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
proj=$work/proj
mkdir -p "$proj/tests"
printf 'allow:\n  - tests/**\n' >"$proj/.writewatch.yaml"
failed=0

# run NAME WANT_CODE FLAGS COMMAND [VAR=VALUE...]: runs run.sh as the
# action would, in job "test" of a runner whose RUNNER_TEMP is NAME's own
# unless a VAR says otherwise.
run() {
	name=$1 dir=$work/$1
	mkdir -p "$dir/runner"
	: >"$dir/summary"
	: >"$dir/output"
	(cd "$proj" && env GITHUB_ACTIONS=true GITHUB_WORKSPACE="$proj" \
		GITHUB_STEP_SUMMARY="$dir/summary" GITHUB_OUTPUT="$dir/output" RUNNER_TEMP="$dir/runner" \
		GITHUB_JOB=test RUNNER_OS=Linux RUNNER_ARCH=X64 \
		WRITEWATCH="$ww" WRITEWATCH_FLAGS="$3" WRITEWATCH_COMMAND="$4" "${@:5}" \
		"$here/run.sh" >"$dir/stdout" 2>"$dir/stderr")
	code=$?
	if [ "$code" != "$2" ]; then
		echo "action test $name: exit code $code, want $2"
		sed 's/^/    /' "$dir/stderr"
		failed=1
	fi
}

# has NAME FILE TEXT: FILE of test NAME contains TEXT.
has() {
	if ! grep -qF -- "$3" "$work/$1/$2"; then
		echo "action test $1: $2 lacks: $3"
		sed 's/^/    /' "$work/$1/$2"
		failed=1
	fi
}

junit=runner/writewatch/junit.xml

run clean 0 --quiet "sh -c 'echo \"a  b\" > tests/out.txt'"
has clean output "exit-code=0"
has clean output "junit=$work/clean/$junit"
has clean output "artifact-name=writewatch-junit-test-Linux-X64"
has clean summary "No writes outside the allowlist"
has clean "$junit" "<testsuites"
if [ "$(cat "$proj/tests/out.txt" 2>/dev/null)" != "a  b" ]; then
	echo "action test clean: the command's quoted words were not passed as written"
	failed=1
fi

run stray 86 --quiet "sh -c 'echo x > stray.txt'"
has stray output "exit-code=86"
has stray summary "stray.txt"
has stray stderr "::error "
has stray "$junit" "<failure"

rm -f "$proj/stray.txt"
run audit 0 "--audit --quiet" "sh -c 'echo x > stray.txt'"
has audit output "exit-code=0"
has audit summary "stray.txt"

run notfound 127 "" "writewatch-action-test-no-such-command --flag"
has notfound output "exit-code=127"
has notfound summary "writewatch exited with 127: the command was not found."

# The report's artifact: a name of each leg of a matrix, and of each use
# of the action in a job (the same RUNNER_TEMP), with a report of its own.
run leg1 0 --quiet true WRITEWATCH_JOB_INDEX=1 WRITEWATCH_JOB_TOTAL=2 RUNNER_ARCH=ARM64
has leg1 output "artifact-name=writewatch-junit-test-Linux-ARM64-1"
run second 0 --quiet true RUNNER_TEMP="$work/clean/runner"
has second output "artifact-name=writewatch-junit-test-Linux-X64-2"
has second output "junit=$work/clean/runner/writewatch/junit-2.xml"
has clean "$junit" "<testsuites"
run named 0 --quiet true WRITEWATCH_ARTIFACT=my-report
has named output "artifact-name=my-report"

if [ "$failed" = 0 ]; then
	echo "action/test.sh: run.sh passed (clean, stray write, --audit, command not found, artifact names)"
fi
exit $failed
