// Package attribution keeps the traced process tree as the kernel
// reported it (fork, exec, exit), so that every write can be tied to the
// process that made it and to its chain of ancestors up to COMMAND.
package attribution

import (
	"path/filepath"
	"sort"

	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Proc is what is known of one process of the tree.
type Proc struct {
	TGID   uint32 // initial PID namespace
	NSTGID uint32 // writewatch's PID namespace; 0 when not yet seen
	Parent uint32 // tgid of the process of the tree that made it
	Comm   string
	Exe    string
	Args   []string
	Alive  bool
}

// Tree is the traced process tree, keyed by tgid.
type Tree struct {
	root        uint32
	launcherPID uint32 // writewatch itself, COMMAND's parent
	procs       map[uint32]*Proc
	seen        int
}

// NewTree starts a tree for COMMAND, whose pid in writewatch's PID
// namespace is nsPID, started by writewatch (launcherPID, same namespace).
// SetRoot gives COMMAND's kernel id once the kernel has reported it.
func NewTree(nsPID, launcherPID uint32, args []string) *Tree {
	t := &Tree{procs: map[uint32]*Proc{}, launcherPID: launcherPID}
	comm := ""
	if len(args) > 0 {
		comm = filepath.Base(args[0])
	}
	t.procs[0] = &Proc{NSTGID: nsPID, Comm: comm, Args: args, Alive: true}
	t.seen = 1
	return t
}

// SetRoot records COMMAND's tgid in the initial PID namespace.
func (t *Tree) SetRoot(tgid uint32) {
	p := t.procs[t.root]
	delete(t.procs, t.root)
	p.TGID = tgid
	t.root = tgid
	t.procs[tgid] = p
}

// Observe updates the tree from one record. Write records only fill in
// what the process's own records tell (its namespace pid, its name).
func (t *Tree) Observe(ev *tracer.Event) {
	switch ev.Kind {
	case tracer.KindFork:
		child := &Proc{TGID: ev.TGID, NSTGID: ev.NSTGID, Parent: ev.PPID, Alive: true}
		if p := t.procs[ev.PPID]; p != nil {
			child.Comm, child.Exe, child.Args = p.Comm, p.Exe, p.Args
		}
		t.procs[ev.TGID] = child
		t.seen++
	case tracer.KindExec:
		p := t.get(ev)
		p.Exe = ev.String(tracer.SlotPath)
		p.Args = ev.Args()
		p.Comm = string(ev.Comm)
	case tracer.KindExit:
		t.get(ev).Alive = false
	default:
		t.get(ev)
	}
}

// get returns the record's process, adding it if its fork was not seen
// (a record lost on the way).
func (t *Tree) get(ev *tracer.Event) *Proc {
	p := t.procs[ev.TGID]
	if p == nil {
		p = &Proc{TGID: ev.TGID, Parent: ev.PPID, Comm: string(ev.Comm), Alive: true}
		t.procs[ev.TGID] = p
		t.seen++
	}
	if p.NSTGID == 0 && ev.NSTGID != 0 {
		p.NSTGID = ev.NSTGID
	}
	if p.Comm == "" {
		p.Comm = string(ev.Comm)
	}
	return p
}

// Seen is how many processes the tree has had.
func (t *Tree) Seen() int { return t.seen }

// Cmdlines lists the command lines of the processes the tree has had.
func (t *Tree) Cmdlines() [][]string {
	out := make([][]string, 0, len(t.procs))
	for _, p := range t.procs {
		if len(p.Args) > 0 {
			out = append(out, p.Args)
		}
	}
	return out
}

// Proc returns the process, or nil.
func (t *Tree) Proc(tgid uint32) *Proc { return t.procs[tgid] }

// Report describes process tgid for a report.
func (t *Tree) Report(tgid uint32) report.Proc {
	p := t.procs[tgid]
	if p == nil {
		return report.Proc{PID: int(tgid), Cmdline: []string{}}
	}
	rp := report.Proc{PID: t.userPID(p), Comm: p.Comm, Exe: p.Exe, Cmdline: p.Args}
	if rp.Cmdline == nil {
		rp.Cmdline = []string{}
	}
	switch par := t.procs[p.Parent]; {
	case p.TGID == t.root:
		rp.PPID = int(t.launcherPID)
	case par != nil:
		rp.PPID = t.userPID(par)
	default:
		rp.PPID = int(p.Parent)
	}
	return rp
}

// userPID is the pid a user of writewatch recognises: the one in
// writewatch's PID namespace when known.
func (t *Tree) userPID(p *Proc) int {
	if p.NSTGID != 0 {
		return int(p.NSTGID)
	}
	return int(p.TGID)
}

// Chain lists the ancestors of tgid, nearest first, ending with COMMAND's
// process. It is empty for COMMAND itself.
func (t *Tree) Chain(tgid uint32) []report.Proc {
	chain := []report.Proc{}
	p := t.procs[tgid]
	for steps := 0; p != nil && p.TGID != t.root && steps < 1024; steps++ {
		p = t.procs[p.Parent]
		if p == nil {
			break
		}
		chain = append(chain, t.Report(p.TGID))
	}
	return chain
}

// Survivors lists processes of the tree still alive, given the kernel's
// list of tracked tgids, in pid order.
func (t *Tree) Survivors(alive []uint32) []report.Proc {
	out := []report.Proc{}
	sort.Slice(alive, func(i, j int) bool { return alive[i] < alive[j] })
	for _, tgid := range alive {
		out = append(out, t.Report(tgid))
	}
	return out
}
