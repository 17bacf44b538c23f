package tracer

//go:generate go tool bpf2go -target amd64,arm64 -type event_hdr -type ww_event_kind -type ww_stat -type ww_slot -type ww_mark -type ww_via -type ww_tier -type ww_action -type inode_key -type prefix_key -type repeat_key -type read_key -type file_key -type ww_go_flag -type ww_go_probe -type ww_meta_flag -type ww_rec -type goproc -type ww_contents_why -type contents_state writewatch ../bpf/writewatch.bpf.c -- -I../bpf/include -I../bpf
//go:generate go tool bpf2go -target amd64,arm64 enforce ../bpf/enforce.bpf.c -- -I../bpf/include -I../bpf
