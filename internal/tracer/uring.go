package tracer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
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
