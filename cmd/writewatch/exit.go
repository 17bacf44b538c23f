package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/run"
	"github.com/writewatch/writewatch/internal/sandbox"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Exit codes, documented in README.md and in --help (helpExitCodes).
const (
	exitUsage      = 2                     // bad flags, bad config, unwritable report file
	exitInternal   = 70                    // writewatch failed during the run, or an output asked for was not written
	exitViolations = report.ExitViolations // writes outside the allowlist were found (default mode)
	exitCannot     = 87                    // cannot trace here: privileges, BTF, kernel
	exitIncomplete = report.ExitIncomplete // writewatch could not see everything; the verdict is unknown
	exitNotExec    = 126                   // COMMAND exists but cannot be executed
	exitNotFound   = 127                   // COMMAND not found
)

// outcome is what a run came to, as far as the exit code goes.
type outcome struct {
	// startErr is why COMMAND did not start; nil when it did.
	startErr error
	// rep is the run's report (when COMMAND did not start, one that says
	// so).
	rep *report.Report
	// traceErr is the error tracing failed with while COMMAND ran.
	traceErr error
	audit    bool
	// acceptIncomplete: a run that could not see everything exits as if
	// it had seen everything (--accept-incomplete).
	acceptIncomplete bool
	// failed tells which kinds of output could not be written.
	failed [failKinds]bool
}

// exitCode is writewatch's exit code:
//
//   - when COMMAND did not start, the code for why (startFailures);
//   - 70 when tracing failed while COMMAND ran;
//   - else 86 when writes outside the allowlist were found, unless --audit;
//   - else 88 when writewatch could not see everything (the report's
//     Incomplete), unless --audit or --accept-incomplete;
//   - else COMMAND's own.
//
// An output that could not be written then makes it 70: one that fails
// the run when the code was still COMMAND's own, the summary when the
// code was 0.
func exitCode(o *outcome) int {
	if o.startErr != nil {
		return startFailureOf(o.startErr).code
	}
	code := o.rep.Verdict(o.audit, o.acceptIncomplete)
	if o.traceErr != nil {
		code = exitInternal
	}
	if (o.failed[failRun] && code == o.rep.CommandExit) || (o.failed[failIfClean] && code == 0) {
		return exitInternal
	}
	return code
}

// startFailure is one reason COMMAND could not start: the error it
// wraps, writewatch's exit code, and the line that explains it (user is
// the sudo caller COMMAND runs as, or nil).
type startFailure struct {
	err     error
	code    int
	explain func(name string, err error, user *launch.Identity) string
}

var startFailures = []startFailure{
	{launch.ErrNotFound, exitNotFound, func(name string, _ error, user *launch.Identity) string {
		return "writewatch: " + name + ": command not found" + user.NotFoundHint(name)
	}},
	{launch.ErrNotExecutable, exitNotExec, plainError},
	{tracer.ErrPermission, exitCannot, func(_ string, err error, _ *launch.Identity) string {
		if advice := launch.CurrentPrivileges().Advice(); advice != "" {
			return "writewatch: cannot trace here: " + advice
		}
		// Root, or the capabilities are there: the kernel refused for
		// another reason, which the error tells.
		return "writewatch: cannot trace here: " + err.Error()
	}},
	{run.ErrTracer, exitCannot, plainError},
	{sandbox.ErrUnavailable, exitCannot, func(_ string, err error, _ *launch.Identity) string {
		why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()), ": ")
		if !errors.Is(err, sandbox.ErrNoPrivilege) {
			// Root cannot either (no overlayfs, say): no sudo would help.
			return "writewatch: --sandbox: cannot make the sandbox here: " + why + "; run writewatch without --sandbox"
		}
		return "writewatch: --sandbox: cannot make the sandbox here: " + why + "; run writewatch as root (sudo writewatch --sandbox ...), or without --sandbox"
	}},
	{launch.ErrConfine, exitCannot, func(_ string, err error, _ *launch.Identity) string {
		return fmt.Sprintf("writewatch: cannot enforce here: %v (--enforce-with picks another tier; --ignore-metadata goes without the metadata guard)", err)
	}},
}

// startFailureOf classifies why COMMAND could not start; anything else is
// writewatch's own failure.
func startFailureOf(err error) startFailure {
	for _, f := range startFailures {
		if errors.Is(err, f.err) {
			return f
		}
	}
	return startFailure{err, exitInternal, plainError}
}

func plainError(_ string, err error, _ *launch.Identity) string { return "writewatch: " + err.Error() }
