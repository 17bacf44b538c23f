package report

import "time"

// Kill is a process --enforce killed: the write it was killed for, the
// test it worked for, and, when it ran tests itself, the tests its
// death ended. A process is listed once, for the first write it was
// killed for.
type Kill struct {
	// PID is the process, as seen in writewatch's PID namespace.
	PID     int      `json:"pid"`
	Comm    string   `json:"comm"`
	Exe     string   `json:"exe,omitempty"`
	Cmdline []string `json:"cmdline"`
	// Time is when it made the write it was killed for.
	Time time.Time `json:"time"`
	// Op, Path, Role and Flags are that write's, as its Violation has
	// them; DeniedBy and NotEnforced say why it was refused, as the
	// Violation's do (neither: the path is outside the allowlist).
	Op          string `json:"op"`
	Path        string `json:"path"`
	Role        string `json:"role,omitempty"`
	Flags       string `json:"flags,omitempty"`
	DeniedBy    string `json:"denied_by,omitempty"`
	NotEnforced string `json:"not_enforced,omitempty"`
	// Action is ActionKilled or ActionBlockedKilled.
	Action string `json:"action"`
	// Who is the test it worked for when it was killed.
	Who
	// RanTests says the process ran tests itself: a Go test binary, or
	// a runner that announced its tests (docs/protocol.md). Its death
	// ended them: those running did not finish (Interrupted, besides
	// Who.Test), and those after did not run (NotRun). A process that
	// only worked for a test (a command the test started) ended no
	// test: the runner goes on, and the test sees its command die.
	RanTests bool `json:"ran_tests,omitempty"`
	// Interrupted are the other tests running in it when it was killed
	// (parallel tests, and the tests whose subtest Who.Test is).
	Interrupted []TestRef `json:"interrupted,omitempty"`
	// NotRun are its tests that never started, in the order it would
	// have run them: a Go test binary's Test and Fuzz functions
	// selected by its -test.run and -test.skip, or the tests a runner
	// announced it would run (the protocol's plan) that no process of
	// the run began. A test another kill of the run lists already is
	// not listed again.
	NotRun []TestRef `json:"not_run,omitempty"`
	// NotRunUnknown says why the tests that did not run cannot be
	// listed, when RanTests and they cannot; "" otherwise.
	NotRunUnknown string `json:"not_run_unknown,omitempty"`
}

// TestRef names a test of the run, as TestResult does.
type TestRef struct {
	Package string `json:"package,omitempty"`
	ID      string `json:"id"`
}

// Reason says what k was killed for: "open /p O_WRONLY outside the
// allowlist", "... denied by .writewatch.yaml:7", or "... allowed by
// SOURCE, but --enforce cannot grant it exactly".
func (k *Kill) Reason() string {
	s := k.Op + " " + k.Path
	if k.Flags != "" {
		s += " " + k.Flags
	}
	if k.Role != "" && k.Op != "symlink" {
		s += " (" + k.Role + ")"
	}
	switch {
	case k.NotEnforced != "":
		return s + " allowed by " + k.NotEnforced + ", but --enforce cannot grant it exactly"
	case k.DeniedBy != "":
		return s + " denied by " + k.DeniedBy
	}
	return s + " outside the allowlist"
}

// MarshalJSON encodes k with "cmdline" as an array even when nil.
func (k Kill) MarshalJSON() ([]byte, error) {
	type plain Kill
	q := plain(k)
	q.Cmdline = nonNil(q.Cmdline)
	return marshal(q)
}
