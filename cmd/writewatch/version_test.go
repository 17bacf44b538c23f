package main

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	const rev = "39bc35ef61550df6c007407576896281ebbb3d24"
	for _, tc := range []struct {
		b    buildInfo
		want string // buildVersion
		text string // in versionText
	}{
		{buildInfo{module: "v1.2.3"}, "v1.2.3", "no VCS information"},
		{buildInfo{module: "v0.0.0-20261130190635-39bc35ef6155+dirty", revision: rev, time: "2026-11-30T19:06:35Z", modified: true},
			"v0.0.0-20261130190635-39bc35ef6155+dirty", "revision " + rev + " of 2026-11-30T19:06:35Z, with uncommitted changes (dirty)"},
		{buildInfo{module: "(devel)", revision: rev}, "devel-39bc35ef6155", "revision " + rev + "\n"},
		{buildInfo{module: "(devel)", revision: rev, modified: true}, "devel-39bc35ef6155+dirty", "(dirty)"},
		{buildInfo{module: "(devel)"}, "devel", "no VCS information"},
	} {
		if got := buildVersion(tc.b); got != tc.want {
			t.Errorf("buildVersion(%+v) = %q, want %q", tc.b, got, tc.want)
		}
		text := versionText(tc.b)
		if !strings.HasPrefix(text, "writewatch "+tc.want+"\n") || !strings.Contains(text, tc.text) {
			t.Errorf("versionText(%+v) =\n%s", tc.b, text)
		}
	}
}
