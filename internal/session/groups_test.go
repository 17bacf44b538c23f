package session

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/writewatch/writewatch/report"
)

func TestGroupsGroups(t *testing.T) {
	b := NewGroups()
	first := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Add(report.Violation{Op: "open", Path: "/b", RequestedPath: "b", PID: 1, Comm: "one", First: first})
	b.Add(report.Violation{Op: "open", Path: "/b", RequestedPath: "./b", PID: 2, Comm: "two", First: first.Add(time.Second)})
	b.Add(report.Violation{Op: "open", Path: "/b", PID: 3, Count: 5})
	b.Add(report.Violation{Op: "rename", Role: report.RoleNew, Path: "/a", PID: 4})
	b.Add(report.Violation{Op: "rename", Role: report.RoleOld, Path: "/a", PID: 5})
	b.Add(report.Violation{Op: "mkdir", Path: "/a", PID: 6, Count: 3, Action: "other"})
	b.Add(report.Violation{Op: "mkdir", Path: "/a", PID: 7, Count: -1})

	if got := b.Len(); got != 4 {
		t.Fatalf("Len() = %d, want 4", got)
	}
	got := b.Violations()
	type row struct {
		op, path, role string
		count, pid     int
		action         string
	}
	var rows []row
	for _, v := range got {
		rows = append(rows, row{v.Op, v.Path, v.Role, v.Count, v.PID, v.Action})
	}
	want := []row{
		{"mkdir", "/a", "", 4, 6, "other"},
		{"rename", "/a", report.RoleNew, 1, 4, report.ActionReported},
		{"rename", "/a", report.RoleOld, 1, 5, report.ActionReported},
		{"open", "/b", "", 7, 1, report.ActionReported},
	}
	if !slices.Equal(rows, want) {
		t.Errorf("Violations():\n got %v\nwant %v", rows, want)
	}
	open := got[3]
	if open.RequestedPath != "b" || open.Comm != "one" || !open.First.Equal(first) {
		t.Errorf("first occurrence not kept: %+v", open)
	}

	// The result is a copy: changing it leaves the builder alone.
	got[0].Count = 100
	if again := b.Violations(); again[0].Count != 4 {
		t.Errorf("Violations() shares memory with the builder")
	}
}

func TestGroupsEmpty(t *testing.T) {
	for _, b := range []*Groups{NewGroups(), new(Groups)} {
		if v := b.Violations(); v == nil || len(v) != 0 {
			t.Errorf("Violations() = %#v, want an empty non-nil slice", v)
		}
	}
	var b Groups // the zero value works
	b.Add(report.Violation{Op: "unlink", Path: "/x"})
	b.Add(report.Violation{Op: "unlink", Path: "/x"})
	if v := b.Violations(); len(v) != 1 || v[0].Count != 2 {
		t.Errorf("zero Groups: %+v", v)
	}
}

func TestGroupsRepeatDoesNotAllocate(t *testing.T) {
	b := NewGroups()
	v := report.Violation{Op: "open", Path: "/home/dev/.cache/x", Role: "", Flags: "O_WRONLY", Cmdline: []string{"x"}}
	b.Add(v)
	allocs := testing.AllocsPerRun(1000, func() { b.Add(v) })
	if allocs != 0 {
		t.Errorf("Add of a repeat allocates %v times, want 0", allocs)
	}
	if got := b.Violations()[0].Count; got != 1002 {
		t.Errorf("Count = %d, want 1002", got)
	}
}

func BenchmarkGroupsAdd(b *testing.B) {
	vs := make([]report.Violation, 64)
	for i := range vs {
		vs[i] = report.Violation{Op: "open", Path: fmt.Sprintf("/home/dev/.cache/file-%d", i)}
	}
	bl := NewGroups()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		bl.Add(vs[i%len(vs)])
	}
}

func TestGroupsLimit(t *testing.T) {
	b := &Groups{Limit: 2}
	for _, p := range []string{"/a", "/b", "/c", "/a", "/d"} {
		b.Add(report.Violation{Op: "open", Path: p})
	}
	vs := b.Violations()
	if len(vs) != 2 || vs[0].Path != "/a" || vs[0].Count != 2 || vs[1].Path != "/b" {
		t.Errorf("listed %+v, want /a twice and /b", vs)
	}
	if b.Unlisted != 2 || !b.Full() {
		t.Errorf("unlisted %d, full %v: want 2, true", b.Unlisted, b.Full())
	}
	r := &report.Report{UnlistedViolations: 1}
	if !r.Failed() {
		t.Error("a report with only unlisted violations must fail")
	}
}

// A group seen by a system call and then by the filesystem says both,
// in that order, whichever came first; marking it seen counts nothing.
func TestGroupsSeenBy(t *testing.T) {
	b := NewGroups()
	b.Add(report.Violation{Op: "unlink", Path: "/p/a", SeenBy: []string{report.SeenByFilesystem}})
	b.Add(report.Violation{Op: "unlink", Path: "/p/a", SeenBy: []string{report.SeenBySyscall}})
	b.Add(report.Violation{Op: "open", Path: "/p/b", SeenBy: []string{report.SeenBySyscall}})
	if !b.MarkSeen("open", "/p/b", "", "", report.SeenByFilesystem) || !b.MarkSeen("open", "/p/b", "", "", report.SeenByFilesystem) {
		t.Fatal("MarkSeen found no group")
	}
	if b.MarkSeen("open", "/p/c", "", "", report.SeenByFilesystem) {
		t.Error("MarkSeen found a group never added")
	}
	vs := b.Violations()
	for _, v := range vs {
		if len(v.SeenBy) != 2 || v.SeenBy[0] != report.SeenBySyscall || v.SeenBy[1] != report.SeenByFilesystem {
			t.Errorf("%s: seen by %q", v.Path, v.SeenBy)
		}
	}
	if vs[0].Count != 2 || vs[1].Count != 1 {
		t.Errorf("counts %d, %d", vs[0].Count, vs[1].Count)
	}
}

// AtPath and SeeAll find a path's groups, in the order they were added,
// through an index: the sandbox's changes look up each of theirs.
func TestGroupsAtPath(t *testing.T) {
	var b Groups // the zero value
	b.Add(report.Violation{Op: "open", Path: "/a", PID: 1})
	b.Add(report.Violation{Op: "open", Path: "/b", PID: 2})
	b.Add(report.Violation{Op: "unlink", Path: "/a", PID: 3})
	b.Add(report.Violation{Op: "open", Path: "/a", PID: 4}) // a repeat: no group of its own
	var pids []int
	for _, g := range b.AtPath("/a") {
		pids = append(pids, g.PID)
	}
	if !slices.Equal(pids, []int{1, 3}) {
		t.Errorf("AtPath(/a): pids %v, want [1 3]", pids)
	}
	if got := b.AtPath("/c"); len(got) != 0 {
		t.Errorf("AtPath(/c) = %v", got)
	}
	b.SeeAll("/a", report.SeenBySandbox)
	for _, v := range b.Violations() {
		if sandboxed := slices.Contains(v.SeenBy, report.SeenBySandbox); sandboxed != (v.Path == "/a") {
			t.Errorf("%s %s: seen by %v", v.Op, v.Path, v.SeenBy)
		}
	}
}

// Finding the groups of each of 20,000 paths among 20,000 groups takes a
// lookup each, not a pass over all.
func BenchmarkGroupsAtPath(b *testing.B) {
	g := NewGroups()
	for i := range 20_000 {
		g.Add(report.Violation{Op: "open", Path: fmt.Sprintf("/many/micro-%d.txt", i)})
	}
	for b.Loop() {
		for i := range 20_000 {
			g.AtPath(fmt.Sprintf("/many/micro-%d.txt", i))
		}
	}
}
