//go:build !amd64 && !arm64

package ops

// writewatch's syscall numbers (numbers.go), bpf/lib/arch.h and the BPF
// objects (bpf2go -target amd64,arm64 in tracer) exist for
// x86-64 and arm64 only. Every package that traces imports this one, so
// on any other GOARCH the build stops here first, with this message.
const _ = "writewatch builds for linux/amd64 and linux/arm64 only" + 0
