package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/pathwalk"
	"github.com/writewatch/writewatch/tracer"
)

// Fact is one question the session asked of the host and its answer, as
// a recording keeps it.
type Fact struct {
	// Ask names the question (the Host method) and its arguments, kept
	// byte for byte (a path need not be UTF-8).
	Ask tracer.Bytes `json:"ask"`
	// Answer is the answer, as JSON.
	Answer json.RawMessage `json:"answer"`
}

// Recorder answers as its Host does, and hands each question and answer
// to Keep.
type Recorder struct {
	Host Host
	Keep func(Fact)
}

func (r *Recorder) keep(ask string, answer any) {
	data, err := json.Marshal(answer)
	if err != nil {
		return
	}
	r.Keep(Fact{Ask: tracer.Bytes(ask), Answer: data})
}

// Resolve answers and keeps the answer.
func (r *Recorder) Resolve(path string, o pathwalk.Options) Walk {
	w := r.Host.Resolve(path, o)
	r.keep(resolveAsk(path, o), walkAnswer{Path: tracer.Bytes(w.Path), Links: w.Links, Gone: w.Gone, Err: errText(w.Err)})
	return w
}

// Stat answers and keeps the answer.
func (r *Recorder) Stat(path string) (File, error) {
	f, err := r.Host.Stat(path)
	r.keep("stat "+path, fileAnswer{File: f, Err: errText(err)})
	return f, err
}

// Lstat answers and keeps the answer.
func (r *Recorder) Lstat(path string) (File, error) {
	f, err := r.Host.Lstat(path)
	r.keep("lstat "+path, fileAnswer{File: f, Err: errText(err)})
	return f, err
}

// Descriptor answers and keeps the answer.
func (r *Recorder) Descriptor(fd, linkPath string) Held {
	h := r.Host.Descriptor(fd, linkPath)
	r.keep("descriptor "+fd+"\x00"+linkPath, heldAnswer{Target: tracer.Bytes(h.Target), OK: h.OK})
	return h
}

// OtherNames answers and keeps the answer.
func (r *Recorder) OtherNames(dev, ino uint64, known string, want int, roots []string) []string {
	names := r.Host.OtherNames(dev, ino, known, want, roots)
	kept := make([]tracer.Bytes, len(names))
	for i, n := range names {
		kept[i] = tracer.Bytes(n)
	}
	r.keep(othersAsk(dev, ino, known, want, roots), kept)
	return names
}

// Filesystem answers and keeps the answer.
func (r *Recorder) Filesystem(path string) (FS, error) {
	f, err := r.Host.Filesystem(path)
	r.keep("filesystem "+path, fsAnswer{FS: f, Err: errText(err)})
	return f, err
}

// MountCalls answers and keeps the answer.
func (r *Recorder) MountCalls() uint32 {
	n := r.Host.MountCalls()
	r.keep("mount calls", n)
	return n
}

// ParentOf answers and keeps the answer.
func (r *Recorder) ParentOf(pid int32) (int32, error) {
	ppid, err := r.Host.ParentOf(pid)
	r.keep("parent "+strconv.Itoa(int(pid)), parentAnswer{PPID: ppid, Err: errText(err)})
	return ppid, err
}

// GoTestSource answers and keeps the answer.
func (r *Recorder) GoTestSource(tgid uint32, pc uint64, name string) (string, int) {
	file, line := r.Host.GoTestSource(tgid, pc, name)
	r.keep(sourceAsk(tgid, pc, name), sourceAnswer{File: tracer.Bytes(file), Line: line})
	return file, line
}

// GoTestFuncs answers and keeps the answer.
func (r *Recorder) GoTestFuncs(tgid uint32) ([]gobin.TestFunc, error) {
	funcs, err := r.Host.GoTestFuncs(tgid)
	r.keep("testfuncs "+strconv.Itoa(int(tgid)), funcsAnswer{Funcs: funcs, Err: errText(err)})
	return funcs, err
}

// Replay answers from the facts a Recorder kept: each question gets the
// answers it got, in their order, the last one again once they are used
// up. A question never asked in the recording gets the answer of a
// machine where nothing of the run is left: no such file, no such
// process, no source known.
type Replay struct {
	answers map[string][]json.RawMessage
}

// NewReplay makes a Replay of facts.
func NewReplay(facts []Fact) *Replay {
	r := &Replay{answers: map[string][]json.RawMessage{}}
	for _, f := range facts {
		r.answers[string(f.Ask)] = append(r.answers[string(f.Ask)], f.Answer)
	}
	return r
}

// answer decodes the next answer to ask into v, and reports whether there
// was one.
func (r *Replay) answer(ask string, v any) bool {
	as := r.answers[ask]
	if len(as) == 0 {
		return false
	}
	if len(as) > 1 {
		r.answers[ask] = as[1:]
	}
	return json.Unmarshal(as[0], v) == nil
}

// Resolve answers as recorded; unrecorded, the path cleaned as text.
func (r *Replay) Resolve(path string, o pathwalk.Options) Walk {
	var a walkAnswer
	if !r.answer(resolveAsk(path, o), &a) {
		if !strings.HasPrefix(path, "/") {
			path = o.Dir + "/" + path
		}
		return Walk{Path: filepath.Clean(path), Err: &fs.PathError{Op: "lookup", Path: path, Err: syscall.ENOENT}}
	}
	return Walk{Path: string(a.Path), Links: a.Links, Gone: a.Gone, Err: errOf(a.Err)}
}

// Stat answers as recorded; unrecorded, no such file.
func (r *Replay) Stat(path string) (File, error) { return r.file("stat", path) }

// Lstat answers as recorded; unrecorded, no such file.
func (r *Replay) Lstat(path string) (File, error) { return r.file("lstat", path) }

func (r *Replay) file(op, path string) (File, error) {
	var a fileAnswer
	if !r.answer(op+" "+path, &a) {
		return File{}, &fs.PathError{Op: op, Path: path, Err: syscall.ENOENT}
	}
	return a.File, errOf(a.Err)
}

// Descriptor answers as recorded; unrecorded, no descriptor.
func (r *Replay) Descriptor(fd, linkPath string) Held {
	var h heldAnswer
	r.answer("descriptor "+fd+"\x00"+linkPath, &h)
	return Held{Target: string(h.Target), OK: h.OK}
}

// OtherNames answers as recorded; unrecorded, none.
func (r *Replay) OtherNames(dev, ino uint64, known string, want int, roots []string) []string {
	var kept []tracer.Bytes
	r.answer(othersAsk(dev, ino, known, want, roots), &kept)
	var names []string
	for _, n := range kept {
		names = append(names, string(n))
	}
	return names
}

// Filesystem answers as recorded; unrecorded, no such file.
func (r *Replay) Filesystem(path string) (FS, error) {
	var a fsAnswer
	if !r.answer("filesystem "+path, &a) {
		return FS{}, &fs.PathError{Op: "statfs", Path: path, Err: syscall.ENOENT}
	}
	return a.FS, errOf(a.Err)
}

// MountCalls answers as recorded; unrecorded, unknown.
func (r *Replay) MountCalls() uint32 {
	n := ^uint32(0)
	r.answer("mount calls", &n)
	return n
}

// ParentOf answers as recorded; unrecorded, no such process.
func (r *Replay) ParentOf(pid int32) (int32, error) {
	var a parentAnswer
	if !r.answer("parent "+strconv.Itoa(int(pid)), &a) {
		return 0, syscall.ESRCH
	}
	return a.PPID, errOf(a.Err)
}

// GoTestSource answers as recorded; unrecorded, unknown.
func (r *Replay) GoTestSource(tgid uint32, pc uint64, name string) (string, int) {
	var a sourceAnswer
	r.answer(sourceAsk(tgid, pc, name), &a)
	return string(a.File), a.Line
}

// GoTestFuncs answers as recorded; unrecorded, unknown.
func (r *Replay) GoTestFuncs(tgid uint32) ([]gobin.TestFunc, error) {
	var a funcsAnswer
	if !r.answer("testfuncs "+strconv.Itoa(int(tgid)), &a) {
		return nil, errors.New("the test functions of a Go test binary are not in the recording")
	}
	return a.Funcs, errOf(a.Err)
}

type funcsAnswer struct {
	Funcs []gobin.TestFunc `json:"funcs,omitempty"`
	Err   string           `json:"err,omitempty"`
}

type walkAnswer struct {
	Path  tracer.Bytes `json:"path"`
	Links time.Time    `json:"links,omitzero"`
	Gone  bool         `json:"gone,omitempty"`
	Err   string       `json:"err,omitempty"`
}

type fileAnswer struct {
	File File   `json:"file"`
	Err  string `json:"err,omitempty"`
}

type fsAnswer struct {
	FS  FS     `json:"fs"`
	Err string `json:"err,omitempty"`
}

type parentAnswer struct {
	PPID int32  `json:"ppid"`
	Err  string `json:"err,omitempty"`
}

type heldAnswer struct {
	Target tracer.Bytes `json:"target,omitempty"`
	OK     bool         `json:"ok,omitempty"`
}

type sourceAnswer struct {
	File tracer.Bytes `json:"file,omitempty"`
	Line int          `json:"line,omitempty"`
}

func resolveAsk(path string, o pathwalk.Options) string {
	return fmt.Sprintf("resolve %s\x00%d\x00%d\x00%s\x00%d\x00%s\x00%t", path, o.PID, o.TID, o.Dir, o.Last, o.Root, o.Links != nil)
}

func othersAsk(dev, ino uint64, known string, want int, roots []string) string {
	return fmt.Sprintf("others %d\x00%d\x00%s\x00%d\x00%s", dev, ino, known, want, strings.Join(roots, "\x00"))
}

func sourceAsk(tgid uint32, pc uint64, name string) string {
	return fmt.Sprintf("source %d\x00%d\x00%s", tgid, pc, name)
}

// The errors an answer can carry, by name: the errno a system call
// returned, or one of pathwalk's.
var namedErrs = map[string]error{
	"ErrNoCaller": pathwalk.ErrNoCaller, "ErrNotFile": pathwalk.ErrNotFile, "ErrRelative": pathwalk.ErrRelative,
}

// errText names err for a recording: its errno's name ("ENOENT"), one of
// namedErrs, or its text.
func errText(err error) string {
	if err == nil {
		return ""
	}
	for name, e := range namedErrs {
		if errors.Is(err, e) {
			return name
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

// errOf is the error errText named.
func errOf(s string) error {
	if s == "" {
		return nil
	}
	if e, ok := namedErrs[s]; ok {
		return e
	}
	for e := syscall.Errno(1); e < 4096; e++ {
		if unix.ErrnoName(e) == s {
			return e
		}
	}
	return errors.New(s)
}
