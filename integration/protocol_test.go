package integration

import (
	"strings"
	"testing"
)

// A runner's protocol values that are not valid numbers are reported and
// ignored: the JSON report stays valid (a NaN duration once left it empty).
func TestProtocolBadValuesKeepTheReportValid(t *testing.T) {
	root, _ := project(t)
	script := `announce() { true 2>/dev/null >"/dev/null/.writewatch/1/$1"; }
announce 'result?runner=sh&suite=s&id=nan&outcome=passed&seconds=NaN'
announce 'result?runner=sh&suite=s&id=inf&outcome=failed&seconds=1e999'
announce 'result?runner=sh&suite=s&id=ok&outcome=passed&seconds=0.25'
exit 0
`
	res := ww(t, root, nil, "sh", "-c", script)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", res.code, res.stderr)
	}
	if res.rep.Version == 0 {
		t.Fatalf("no --json report was written\n%s", res.stderr)
	}
	secs := map[string]float64{}
	for _, r := range res.rep.Tests {
		secs[r.ID] = r.Seconds
	}
	if len(secs) != 3 || secs["nan"] != 0 || secs["inf"] != 0 || secs["ok"] != 0.25 {
		t.Errorf("tests = %+v, want nan and inf at 0 s, ok at 0.25 s", res.rep.Tests)
	}
	found := false
	for _, n := range res.rep.Notes {
		found = found || strings.HasPrefix(n, "2 runner-protocol values were not valid")
	}
	if !found {
		t.Errorf("notes %q do not report the 2 bad values", res.rep.Notes)
	}
}
