#!/usr/bin/env bash
# The run step of the GitHub Action (action.yml): runs a command under
# writewatch, writes the JUnit report, the step's outputs and, when
# writewatch could not write one itself, a line of step summary; exits
# with writewatch's exit code.
#
# writewatch runs under sudo (unless this already is root); it runs the
# command as the runner's user, with the job's environment (sudo -E) and
# the job's PATH (writewatch reads it from sudo's caller, since sudo
# resets it to its secure_path).
#
# Environment:
#   WRITEWATCH          the writewatch binary
#   WRITEWATCH_COMMAND  the command, as words a POSIX shell splits them
#                       (quotes and $VARS work; for pipes or &&, give
#                       bash -c '...')
#   WRITEWATCH_FLAGS    writewatch flags before the command (optional)
#   WRITEWATCH_JUNIT    where to write the JUnit report (optional;
#                       default $RUNNER_TEMP/writewatch/junit.xml, and
#                       junit-N.xml for the job's Nth use of the action)
#   WRITEWATCH_ARTIFACT the name of the report's artifact (optional; by
#                       default one that differs from job to job of the
#                       workflow, leg to leg of a matrix and use to use
#                       in a job:
#                       writewatch-junit-JOB-OS-ARCH, then -INDEX in a
#                       matrix, then -N for the job's Nth use)
#   WRITEWATCH_JOB_INDEX, WRITEWATCH_JOB_TOTAL: the job's strategy.job-index
#                       and strategy.job-total (optional)
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP, GITHUB_JOB,
#   RUNNER_OS, RUNNER_ARCH: set by the runner.
set -uo pipefail

ww=${WRITEWATCH:?WRITEWATCH: the writewatch binary}
cmdline=${WRITEWATCH_COMMAND:?WRITEWATCH_COMMAND: the command to run}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
output=${GITHUB_OUTPUT:-/dev/null}

# The job's uses of the action are counted in RUNNER_TEMP, which is the
# job's own: the second and later get a report and an artifact of their own.
state=${RUNNER_TEMP:-/tmp}/writewatch
mkdir -p "$state"
use=$(($(cat "$state/uses" 2>/dev/null || echo 0) + 1))
echo "$use" >"$state/uses"
nth=""
if [ "$use" -gt 1 ]; then
	nth=-$use
fi
junit=${WRITEWATCH_JUNIT:-$state/junit$nth.xml}
artifact=${WRITEWATCH_ARTIFACT:-}
if [ -z "$artifact" ]; then
	artifact=writewatch-junit-${GITHUB_JOB:-job}-${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}
	if [ "${WRITEWATCH_JOB_TOTAL:-1}" -gt 1 ] 2>/dev/null; then
		artifact=$artifact-${WRITEWATCH_JOB_INDEX:-0}
	fi
	artifact=$artifact$nth
fi

eval "command=($cmdline)" || { echo "writewatch action: cannot split the command: $cmdline" >&2; exit 2; }
eval "flags=(${WRITEWATCH_FLAGS:-})" || { echo "writewatch action: cannot split the flags: $WRITEWATCH_FLAGS" >&2; exit 2; }
if [ ${#command[@]} -eq 0 ]; then
	echo "writewatch action: the command is empty" >&2
	exit 2
fi
mkdir -p "$(dirname "$junit")"
rm -f "$junit"

sudo=()
if [ "$(id -u)" != 0 ]; then
	sudo=(sudo -n -E --)
fi
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
before=$(size "$summary")

"${sudo[@]}" "$ww" --junit "$junit" "${flags[@]}" -- "${command[@]}"
code=$?

# writewatch wrote the report as root: it belongs to the runner's user,
# like the rest of the job's files.
if [ ${#sudo[@]} -gt 0 ] && [ -e "$junit" ]; then
	sudo -n chown "$(id -u):$(id -g)" "$junit"
fi
echo "exit-code=$code" >>"$output"
echo "artifact-name=$artifact" >>"$output"
if [ -s "$junit" ]; then
	echo "junit=$junit" >>"$output"
fi

# writewatch writes the summary when the command ran; otherwise say why.
if [ "$(size "$summary")" = "$before" ] && [ "$summary" != /dev/null ]; then
	case $code in
	2) why="a usage or configuration error; the command did not run" ;;
	70) why="writewatch failed while the command ran" ;;
	87) why="writewatch cannot trace on this runner (privileges, BTF or kernel); the command did not run" ;;
	126) why="the command is not executable" ;;
	127) why="the command was not found" ;;
	*) why="see the step's log" ;;
	esac
	printf '### writewatch\n\nwritewatch exited with %d: %s.\n\n' "$code" "$why" >>"$summary"
fi
exit $code
