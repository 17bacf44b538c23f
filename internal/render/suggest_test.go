package render

import (
	"bytes"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/report"
	"gopkg.in/yaml.v3"
)

func TestMergeAllow(t *testing.T) {
	items := "# new\n- b\n"
	for _, tt := range []struct{ config, want string }{
		{"", "allow:\n  # new\n  - b\n"},
		{"allow:\n  - a\ndeny:\n  - .git\n", "allow:\n  - a\n  # new\n  - b\ndeny:\n  - .git\n"},
		{"allow:\n    - a # why\n\n    # more\n    - c\n", "allow:\n    - a # why\n\n    # more\n    - c\n    # new\n    - b\n"},
		{"allow:\n- a\n", "allow:\n- a\n# new\n- b\n"},
		{"deny: [.git]\n", "deny: [.git]\nallow:\n  # new\n  - b\n"},
		{"allow: [a]\n", "allow: [a]\n# Add these to the allow list above:\n#   # new\n#   - b\n"},
	} {
		got := mergeAllow(tt.config, items)
		if got != tt.want {
			t.Errorf("mergeAllow(%q) =\n%s\nwant\n%s", tt.config, got, tt.want)
		}
		var v any
		if err := yaml.Unmarshal([]byte(got), &v); err != nil {
			t.Errorf("mergeAllow(%q): not YAML: %v", tt.config, err)
		}
	}
}

func TestWriteSuggestedConfigGolden(t *testing.T) {
	for _, c := range []struct {
		Name   string
		Report func() *report.Report
		config string
	}{
		{"rich", richReport, "# the project's config\nallow:\n  - tests/**\ndeny:\n  - .git\n"},
		{"tests", testsReport, ""},
	} {
		t.Run(c.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSuggestedConfig(&buf, c.Report(), []byte(c.config)); err != nil {
				t.Fatal(err)
			}
			var v any
			if err := yaml.Unmarshal(buf.Bytes(), &v); err != nil {
				t.Errorf("not YAML: %v\n%s", err, buf.String())
			}
			golden.Check(t, c.Name+".suggested.yaml", buf.Bytes())
		})
	}
}
