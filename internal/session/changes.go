package session

import (
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// found adds what the witness's Checker found to the report: violations
// it confirms, and those no reported record explains.
func (s *Session) found(fs []witness.Finding) {
	for i := range fs {
		f := &fs[i]
		for _, g := range f.Seen {
			s.groups.MarkSeen(g.Op, g.Path, g.Role, g.Who, report.SeenByFilesystem)
		}
		if f.Path != "" {
			s.changed(f)
		}
	}
}

// changed reports a change outside the allowlist that the witness alone
// saw, with the path the kernel changed.
func (s *Session) changed(f *witness.Finding) {
	rec := &tracer.Event{TGID: f.TGID}
	if f.Record != nil {
		rec = f.Record.Event()
	}
	viol := report.Violation{
		Op: f.Op, Path: f.Path, RequestedPath: f.Requested, Role: f.Role, First: f.Time,
		Action: report.ActionReported, SeenBy: []string{report.SeenByFilesystem}, PID: int(f.PID), Cmdline: []string{}, Chain: []report.Proc{},
	}
	if f.TGID != 0 {
		p := s.tree.Report(f.TGID)
		viol.PID, viol.PPID, viol.Comm, viol.Cmdline, viol.Exe = p.PID, p.PPID, p.Comm, p.Cmdline, p.Exe
		viol.Chain = s.tree.Chain(f.TGID)
	}
	if f.Record != nil && f.Record.ViaIOUring {
		viol.Via = report.ViaIOUring
	}
	viol.Who = s.tests.Attribute(rec)
	n := s.groups.Len()
	s.groups.Add(viol)
	s.live.Violation(viol.Op, viol.Action, s.groups.Len() > n)
	s.checker.Noted(f.TGID, witness.Group{Op: viol.Op, Path: viol.Path, Role: viol.Role, Who: viol.Who.Key()}, true)
}
