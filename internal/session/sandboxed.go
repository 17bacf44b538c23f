package session

import (
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// SandboxConfig is how the run is sandboxed (--sandbox, package
// sandbox): the places COMMAND saw as overlays, whose every change the
// overlays hold, and those bound through, where writes landed.
type SandboxConfig struct {
	Overlaid []string `json:"overlaid"`
	Real     []string `json:"real"`
}

// Sandboxed is a change the sandbox's overlay held outside the
// allowlist, which never reached the real file: what a path would have
// become. The run hands them over once COMMAND's tree is done.
type Sandboxed struct {
	Path   tracer.Bytes   `json:"path"`
	Dir    bool           `json:"dir,omitempty"`
	Change *report.Change `json:"change"`
}

// overlaid says whether path lies on one of the sandbox's overlays (its
// deepest place is one), where the overlay holds every change.
func (c *SandboxConfig) overlaid(path string) bool {
	_, over := (&report.SandboxInfo{Overlaid: c.Overlaid, Real: c.Real}).Holds(path)
	return over
}

// sandboxChanged is the severity tracker's Changed under --sandbox: on
// an overlay, a file changed exactly when the overlay held a change of
// it (a copy that changed nothing, which renews the change time, is
// none).
func (s *Session) sandboxChanged(path string) (changed, known bool) {
	if !s.cfg.Sandbox.overlaid(path) {
		return false, false
	}
	_, changed = s.sandboxed[path]
	return changed, true
}

// sandboxFindings adds what the sandbox's overlays held to the report:
// each change is seen by the sandbox, in the violations the records
// made of its path; one no record names is a violation of its own,
// written by the process of the newest record that names its entry, or
// by an unknown process of the tree.
func (s *Session) sandboxFindings() {
	for _, path := range s.sandboxOrder {
		c := s.sandboxed[path]
		if groups := s.groups.AtPath(path); len(groups) > 0 {
			s.groups.SeeAll(path, report.SeenBySandbox)
			for _, g := range groups {
				if g.Change == nil {
					g.Change = c.Change
				}
			}
			continue
		}
		viol := report.Violation{
			Op: sandboxOp(c), Path: path, Action: report.ActionReported, SeenBy: []string{report.SeenBySandbox},
			Cmdline: []string{}, Chain: []report.Proc{}, First: s.now, Change: c.Change, Severity: report.SeverityLeftBehind,
		}
		if c.Change.Before != nil {
			viol.Severity = report.SeverityDataLoss
		}
		if r := s.checker.Explainer(path, witnessOps(c)); r != nil {
			p := s.tree.Report(r.TGID)
			viol.Op, viol.RequestedPath, viol.First = r.OpName, r.Requested[0], r.Time
			viol.PID, viol.PPID, viol.Comm, viol.Cmdline, viol.Exe = p.PID, p.PPID, p.Comm, p.Cmdline, p.Exe
			viol.Chain = s.tree.Chain(r.TGID)
			viol.Who = s.tests.Attribute(r.Event())
		}
		s.groups.Add(viol)
	}
}

// sandboxOp names a change no record names, as the witness names its
// own (report.OpCreate and the like).
func sandboxOp(c *Sandboxed) string {
	switch c.Change.Kind {
	case "created":
		if c.Dir {
			return ops.Mkdir.String()
		}
		return report.OpCreate
	case "removed":
		if c.Change.Before != nil && c.Change.Before.Type == "dir" {
			return ops.Rmdir.String()
		}
		return ops.Unlink.String()
	case "moved":
		return ops.Rename.String()
	case "attrib":
		return report.OpAttrib
	}
	return report.OpWrite
}

// witnessOps are the changes of the witness's that a call making c
// would have caused, to find the record that explains it.
func witnessOps(c *Sandboxed) witness.Op {
	switch c.Change.Kind {
	case "created":
		return witness.Create
	case "removed":
		return witness.Delete
	case "moved":
		return witness.Rename
	case "attrib":
		return witness.Attrib
	case "replaced":
		return witness.Create | witness.Delete
	}
	return witness.Modify
}
