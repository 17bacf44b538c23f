package tracer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The tracepoint of io_uring requests is picked by its name and its
// arguments, as the kernel's BTF describes them.
func TestUringTracepoint(t *testing.T) {
	u8 := &btf.Int{Name: "u8", Size: 1}
	boolean := &btf.Int{Name: "_Bool", Size: 1, Encoding: btf.Bool}
	req := &btf.Struct{Name: "io_kiocb", Size: 8, Members: []btf.Member{{Name: "opcode", Type: u8}}}
	void := &btf.Pointer{Target: &btf.Void{}}
	// tp is the BTF of a tracepoint's raw form: a pointer to a function
	// of the tracepoint's data, then its arguments.
	tp := func(name string, args ...btf.Type) btf.Type {
		params := []btf.FuncParam{{Name: "__data", Type: void}}
		for _, a := range args {
			params = append(params, btf.FuncParam{Type: a})
		}
		return &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: params}}}
	}
	reqp := &btf.Pointer{Target: req}
	for _, c := range []struct {
		name  string
		types []btf.Type
		want  string // the tracepoint, or a part of the error
		fails bool
	}{
		{"io_uring_submit_req (the request)", []btf.Type{req, tp("io_uring_submit_req", reqp)}, "io_uring_submit_req", false},
		{"io_uring_submit_sqe (the request, then force_nonblock), as on 6.1", []btf.Type{req, tp("io_uring_submit_sqe", reqp, boolean)}, "io_uring_submit_sqe", false},
		{"both", []btf.Type{req, tp("io_uring_submit_sqe", reqp, boolean), tp("io_uring_submit_req", reqp)}, "io_uring_submit_req", false},
		{"through a const typedef", []btf.Type{req, tp("io_uring_submit_req", &btf.Pointer{Target: &btf.Const{Type: &btf.Typedef{Name: "kiocb_t", Type: req}}})}, "io_uring_submit_req", false},
		{"no io_uring", []btf.Type{u8}, "", false},
		{"io_uring, no tracepoint", []btf.Type{req}, "io_uring requests are not watched", true},
		{"io_uring_submit_sqe with the ring first, as before 6.0", []btf.Type{req, tp("io_uring_submit_sqe", void, void, u8)}, "no tracepoint io_uring_submit_req or io_uring_submit_sqe", true},
		{"a tracepoint without arguments", []btf.Type{req, tp("io_uring_submit_req")}, "not watched", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := btf.NewBuilder(c.types, nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := b.Marshal(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := uringTracepoint(spec)
			switch {
			case c.fails && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %q, %v; want an error saying %q", got, err, c.want)
			case !c.fails && (err != nil || got != c.want):
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// This kernel's io_uring requests are watched, on a tracepoint that
// passes the request.
func TestUringTracepointOfThisKernel(t *testing.T) {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	var req *btf.Struct
	if kernel.TypeByName("io_kiocb", &req) != nil {
		t.Skip("this kernel has no io_uring")
	}
	name, err := uringTracepoint(kernel)
	if err != nil || name == "" {
		t.Fatalf("got %q, %v; want one of %q", name, err, uringTracepoints)
	}
}
