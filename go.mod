module github.com/writewatch/writewatch

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	golang.org/x/sys v0.48.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/net v0.59.0 // indirect

tool github.com/cilium/ebpf/cmd/bpf2go
