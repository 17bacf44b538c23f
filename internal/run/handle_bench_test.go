package run

import (
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/severity"
	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/report"
)

// BenchmarkHandleViolation measures user space's work for one write
// record outside the allowlist that repeats an earlier one: decode, build
// the path, match it against the allowlist, count it in its group.
func BenchmarkHandleViolation(b *testing.B) {
	list, err := allowlist.Load(allowlist.Options{WorkDir: "/home/dev/proj", ConfigPath: "/dev/null", Home: "/home/dev", Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	s := &session{
		cfg:      Config{Allow: list},
		judge:    judge.New(list),
		live:     new(live.Counters),
		builder:  report.NewBuilder(),
		severity: severity.New(time.Now()),
		tree:     attribution.NewTree(10, 1, []string{"go", "test"}),
		repeatOf: map[tracer.RepeatKey][]group{},
	}
	s.tests = attribution.NewTests(s.tree)
	h := tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Op: uint32(ops.Open), Tgid: 10, Ret: 3, Flags: 0o1101}
	raw := tracer.AppendRecord(nil, h, []byte("config.toml\x00"), nil, nil, nil,
		comps("config.toml", "app", ".config", "dev", "home"))
	var ev tracer.Event
	b.ReportAllocs()
	for b.Loop() {
		if err := tracer.Decode(raw, &ev); err != nil {
			b.Fatal(err)
		}
		s.handle(&ev)
	}
	if v := s.builder.Violations(); len(v) != 1 || v[0].Count < 1 {
		b.Fatalf("violations %+v", v)
	}
}
