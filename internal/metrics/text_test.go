package metrics

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// Label values and help texts with the characters the format escapes
// read back the same, by the Prometheus parser and by readSample.
func TestTextEscapes(t *testing.T) {
	odd := "a\"b\\c\nd/é"
	fams := []family{{
		name: NameLastCleanRun, help: "help with \\ and\na newline", typ: "gauge",
		samples: []sample{{labels: []labelPair{{"branch", odd}, {"repo", ""}}, value: 1.7959419715e+09}},
	}, {
		name: NameEvents, help: "events", typ: "gauge",
		samples: []sample{{value: math.Inf(1)}},
	}}
	var buf bytes.Buffer
	if err := writeText(&buf, fams); err != nil {
		t.Fatal(err)
	}
	mfs, err := ParseText(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got := mfs[NameLastCleanRun].GetHelp(); got != fams[0].help {
		t.Errorf("help %q, want %q", got, fams[0].help)
	}
	if v, ok := value(mfs, NameLastCleanRun, map[string]string{"branch": odd, "repo": ""}); !ok || v != 1.7959419715e+09 {
		t.Errorf("Prometheus parser: %v %v\n%s", v, ok, buf.String())
	}
	if v, _ := value(mfs, NameEvents, nil); !math.IsInf(v, 1) {
		t.Errorf("events %v, want +Inf", v)
	}
	if got := readLastClean(strings.NewReader(buf.String()), Labels{"branch": odd, "repo": ""}); got != 1.7959419715e+09 {
		t.Errorf("readLastClean %v\n%s", got, buf.String())
	}
	if got := readLastClean(strings.NewReader(buf.String()), Labels{"branch": odd}); got != 0 {
		t.Errorf("readLastClean with other labels %v, want 0", got)
	}
}

// Lines readSample cannot read give nothing, rather than a wrong value.
func TestReadSampleRefuses(t *testing.T) {
	for _, line := range []string{
		"", "# HELP x y", "name", `name{a="b"`, `name{a="b} 1`, `name{a=b} 1`, `name{a="\q"} 1`, "name notanumber",
	} {
		if _, _, _, ok := readSample(line); ok {
			t.Errorf("readSample(%q) read it", line)
		}
	}
	name, labels, v, ok := readSample(`name{a="x",b="y"} 2.5 1700000000000`)
	if !ok || name != "name" || labels["a"] != "x" || labels["b"] != "y" || v != 2.5 {
		t.Errorf("readSample with a timestamp: %q %v %v %v", name, labels, v, ok)
	}
}
