package tracer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// maxStack is the BPF stack: the verifier refuses a program when the
// frames of its deepest chain of calls add up to more.
const maxStack = 512

// frameSize is the stack a function's frame takes, as Linux 6.1's
// verifier counts it: the deepest offset below r10 it addresses (read,
// written, or handed to a helper), rounded up to 32 bytes, at least 32.
func frameSize(insns asm.Instructions) int {
	deepest := 1
	fromFP := map[asm.Register]bool{} // registers holding r10 (+ an offset)
	for _, ins := range insns {
		class, off := ins.OpCode.Class(), 0
		switch {
		case class.IsLoad() && ins.Src == asm.RFP:
			off = -int(ins.Offset)
		case class.IsStore() && ins.Dst == asm.RFP:
			off = -int(ins.Offset)
		case class.IsALU() && ins.OpCode.ALUOp() == asm.Add && ins.OpCode.Source() == asm.ImmSource && fromFP[ins.Dst]:
			off = -int(ins.Constant)
		case class.IsALU() && ins.OpCode.ALUOp() == asm.Mov && ins.OpCode.Source() == asm.RegSource && ins.Src == asm.RFP:
			fromFP[ins.Dst] = true
		case class.IsALU() || class.IsLoad():
			delete(fromFP, ins.Dst)
		}
		deepest = max(deepest, off)
	}
	return (deepest + 31) / 32 * 32
}

// functions splits a program's instructions (the program and the
// functions it calls, as cilium/ebpf links them) at each symbol.
func functions(insns asm.Instructions) map[string]asm.Instructions {
	fns := map[string]asm.Instructions{}
	name := ""
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			name = sym
		}
		fns[name] = append(fns[name], ins)
	}
	return fns
}

// deepest is the largest stack a chain of calls from fn takes: fn's
// frame and that of the deepest function it calls, directly or through
// a helper that calls back (bpf_loop), with the chain's names.
func deepest(fns map[string]asm.Instructions, fn string, on map[string]bool) (int, []string) {
	size, chain := 0, []string(nil)
	on[fn] = true
	for _, ins := range fns[fn] {
		if !ins.IsFunctionCall() && !ins.IsLoadOfFunctionPointer() {
			continue
		}
		callee := ins.Reference()
		if on[callee] {
			continue
		}
		if s, c := deepest(fns, callee, on); s > size {
			size, chain = s, c
		}
	}
	delete(on, fn)
	own := frameSize(fns[fn])
	return own + size, append([]string{fmt.Sprintf("%s(%d)", fn, own)}, chain...)
}

// Linux 6.1's verifier adds up the frames of a program's deepest chain
// of calls (global functions and bpf_loop callbacks included) and
// refuses it past 512 bytes; later kernels load the same program. So
// that a program growing past it is caught here rather than only under
// make vmtest: every program of every object, on both architectures.
// sys_exit's chain (sys_exit, judge_enter, put_dir, put_file, put_path,
// walk_step) is the one closest to the limit.
func TestCombinedStackFitsLinux61(t *testing.T) {
	for _, obj := range []string{
		"writewatch_x86_bpfel.o", "writewatch_arm64_bpfel.o",
		"enforce_x86_bpfel.o", "enforce_arm64_bpfel.o",
	} {
		spec, err := ebpf.LoadCollectionSpec(obj)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range spec.Programs {
			fns := functions(p.Instructions)
			size, chain := deepest(fns, p.Instructions[0].Symbol(), map[string]bool{})
			if size > maxStack {
				t.Errorf("%s: %s: combined stack %d bytes > %d: %s", obj, name, size, maxStack, strings.Join(chain, " -> "))
			} else if testing.Verbose() {
				t.Logf("%s: %s: %d bytes: %s", obj, name, size, strings.Join(chain, " -> "))
			}
		}
	}
}
