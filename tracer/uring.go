package tracer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// uringTracepoints name, newest first, the tracepoint where the kernel
// hands over an io_uring request once it is prepared: io_uring_submit_req,
// called io_uring_submit_sqe before (as on Linux 6.1). The program
// uring_submit (bpf/writewatch.bpf.c) is a raw tracepoint one, bound to
// no name until it is attached, and reads the request from the first
// argument; a tracepoint is used only where the kernel's BTF says that
// argument is one (uringTracepoint).
var uringTracepoints = []string{"io_uring_submit_req", "io_uring_submit_sqe"}

// uringTracepoint picks, from the kernel's BTF, the first of
// uringTracepoints whose first argument is the request (struct io_kiocb
// *). On a kernel without io_uring it returns "" and no error: there is
// no request to miss. On one with io_uring and no such tracepoint, the
// error says io_uring requests go unseen.
func uringTracepoint(kernel *btf.Spec) (string, error) {
	var req *btf.Struct
	if err := kernel.TypeByName("io_kiocb", &req); errors.Is(err, btf.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("io_uring requests are not watched: the kernel's BTF: %w", err)
	}
	for _, name := range uringTracepoints {
		if takesRequest(kernel, name) {
			return name, nil
		}
	}
	return "", fmt.Errorf("io_uring requests are not watched: this kernel has io_uring, and no tracepoint %s that passes the request first",
		strings.Join(uringTracepoints, " or "))
}

// takesRequest reports whether the kernel has the tracepoint name and
// its first argument is a struct io_kiocb *. The BTF of a tracepoint's
// raw form, btf_trace_NAME, is a pointer to a function whose first
// parameter is the tracepoint's private data, and the next ones its
// arguments.
func takesRequest(kernel *btf.Spec, name string) bool {
	var td *btf.Typedef
	if kernel.TypeByName("btf_trace_"+name, &td) != nil {
		return false
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return false
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok || len(proto.Params) < 2 {
		return false
	}
	arg, ok := btf.UnderlyingType(proto.Params[1].Type).(*btf.Pointer)
	if !ok {
		return false
	}
	s, ok := btf.UnderlyingType(arg.Target).(*btf.Struct)
	return ok && s.Name == "io_kiocb"
}

// uringObjects is the io_uring program.
type uringObjects struct {
	UringSubmit *ebpf.Program `ebpf:"uring_submit"`
}

func (u *uringObjects) close() { u.UringSubmit.Close() }

// loadURingLater loads and attaches the io_uring program in the
// background, while COMMAND starts. It costs the verifier about as much
// as sys_enter (docs/performance.md#start-up), and only a run whose tree
// sets up a ring needs it. Until it is attached, the kernel pauses
// a process of the tree at the exit of io_uring_setup (uring_later,
// bpf/lib/contents.h), and Next hands over the record that says so only
// once it is: its reader resumes the process then. Requests the tree
// submits meanwhile through a ring from elsewhere make the run
// incomplete (Stats.URingUnwatched); so does a program that cannot load
// or attach (Stats.Unwatched). Call it before COMMAND starts; unless
// later, attach attaches the program, loaded with the others, instead.
func (t *Tracer) loadURingLater(spec *ebpf.CollectionSpec, later bool) error {
	if !later {
		return nil
	}
	maps, err := t.cloneMaps()
	if err == nil {
		if err = t.objs.UringLater.Update(uint32(0), uint32(1), ebpf.UpdateAny); err != nil {
			closeMaps(maps)
		}
	}
	if err != nil {
		close(t.uringReady)
		return fmt.Errorf("tracer: io_uring program later: %w", err)
	}
	go func() {
		defer close(t.uringReady)
		var u uringObjects
		t.loadLater("tracer: io_uring program", spec, &u, maps, func(err error) {
			if err == nil {
				t.objs.UringSubmit = u.UringSubmit
				err = t.attachURing()
			} else {
				err = classify("load the io_uring program", err)
			}
			if err != nil {
				t.unwatched = append(t.unwatched, "io_uring requests are not watched: "+err.Error())
			}
			// Once cleared, io_uring_setup pauses nothing. Should that
			// fail, each one still pauses its process until its record
			// is read, and no request goes unseen.
			_ = t.objs.UringLater.Update(uint32(0), uint32(0), ebpf.UpdateAny)
		})
	}()
	return nil
}

// attachURing attaches the io_uring program, at submission, to the
// tracepoint this kernel has for io_uring requests. A kernel built
// without io_uring has none, and no requests to miss; one with io_uring
// that lacks it makes the run incomplete (Stats.Unwatched), never
// silently blind. Under loadURingLater, t.mu is held.
func (t *Tracer) attachURing() error {
	kernel, err := kernelBTF.Kernel()
	if err != nil {
		return classify("read the kernel's BTF", err)
	}
	name, err := uringTracepoint(kernel)
	if err != nil {
		t.unwatched = append(t.unwatched, err.Error())
		return nil
	}
	if name == "" {
		return nil
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: t.objs.UringSubmit})
	switch {
	case err == nil:
		t.uringLink = l
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT):
		t.unwatched = append(t.unwatched, fmt.Sprintf("io_uring requests are not watched: the kernel has no tracepoint %s to attach to", name))
	default:
		return classify("attach raw tracepoint "+name, err)
	}
	return nil
}

// WaitURing waits until the io_uring program is attached, or could not
// be (Stats.Unwatched says why then).
func (t *Tracer) WaitURing() { <-t.uringReady }
