package session

import (
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/tracer"
)

// BenchmarkHandleViolation measures user space's work for one write
// record outside the allowlist that repeats an earlier one: decode, build
// the path, match it against the allowlist, count it in its group.
func BenchmarkHandleViolation(b *testing.B) {
	list, err := allowlist.Load(allowlist.Options{WorkDir: "/home/dev/proj", ConfigPath: "/dev/null", Home: "/home/dev", Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Command: []string{"go", "test"}, Started: time.Now(), Allow: list}, host.Live{})
	if err != nil {
		b.Fatal(err)
	}
	s.Handle(&Item{Launched: &Launched{PID: 10, Launcher: 1}})
	h := tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Op: uint32(ops.Open), Tgid: 10, Ret: 3, Flags: 0o1101}
	raw := tracer.AppendRecord(nil, h, []byte("config.toml\x00"), nil, nil, nil,
		comps("config.toml", "app", ".config", "dev", "home"))
	var ev tracer.Event
	it := Item{Record: &ev}
	b.ReportAllocs()
	for b.Loop() {
		if err := tracer.Decode(raw, &ev); err != nil {
			b.Fatal(err)
		}
		s.Handle(&it)
	}
	if v := s.groups.Violations(); len(v) != 1 || v[0].Count < 1 {
		b.Fatalf("violations %+v", v)
	}
}

// comps builds a directory slot: components innermost first, each
// NUL-terminated.
func comps(names ...string) []byte {
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	return b
}
