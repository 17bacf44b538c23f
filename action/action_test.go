// Package action holds the GitHub Action's run step (run.sh, tested by
// test.sh, which make test runs); this test checks that action.yml and
// run.sh agree.
package action

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type actionFile struct {
	Inputs  map[string]struct{ Default *string } `yaml:"inputs"`
	Outputs map[string]struct{ Value string }    `yaml:"outputs"`
	Runs    struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID   string            `yaml:"id"`
			If   string            `yaml:"if"`
			Run  string            `yaml:"run"`
			Uses string            `yaml:"uses"`
			Env  map[string]string `yaml:"env"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func TestActionMatchesScript(t *testing.T) {
	data, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	script, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat("run.sh"); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("run.sh is not executable")
	}
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using = %q, want composite", a.Runs.Using)
	}

	// Every input used exists; every input exists for a use.
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(string(data), -1) {
		used[m[1]] = true
		if _, ok := a.Inputs[m[1]]; !ok {
			t.Errorf("action.yml uses inputs.%s, which it does not declare", m[1])
		}
	}
	for name := range a.Inputs {
		if !used[name] {
			t.Errorf("input %s is declared but not used", name)
		}
	}

	// The run step runs run.sh, with the variables run.sh reads.
	runStep := -1
	for i, s := range a.Runs.Steps {
		if s.ID == "run" {
			runStep = i
		}
	}
	if runStep < 0 {
		t.Fatal("no step with id run")
	}
	step := a.Runs.Steps[runStep]
	if !strings.Contains(step.Run, `"$GITHUB_ACTION_PATH/action/run.sh"`) {
		t.Errorf("the run step runs %q, not action/run.sh", step.Run)
	}
	given := slices.Collect(maps.Keys(step.Env))
	if strings.Contains(step.Run, "WRITEWATCH=") {
		given = append(given, "WRITEWATCH")
	}
	for _, m := range regexp.MustCompile(`\$\{(WRITEWATCH[A-Z_]*)[:}]`).FindAllStringSubmatch(string(script), -1) {
		if !slices.Contains(given, m[1]) {
			t.Errorf("run.sh reads %s, which the run step does not set", m[1])
		}
	}
	for _, k := range given {
		if !strings.Contains(string(script), "${"+k) {
			t.Errorf("the run step sets %s, which run.sh does not read", k)
		}
	}

	// The outputs are those run.sh writes.
	for name, o := range a.Outputs {
		if o.Value != "${{ steps.run.outputs."+name+" }}" {
			t.Errorf("output %s = %q", name, o.Value)
		}
		if !strings.Contains(string(script), `"`+name+"=") {
			t.Errorf("run.sh does not write output %s", name)
		}
	}

	// The report is uploaded even when the run step failed, under the
	// name run.sh made for this job, leg and use; a job run again
	// replaces its earlier attempt's.
	last := a.Runs.Steps[len(a.Runs.Steps)-1]
	if !strings.HasPrefix(last.Uses, "actions/upload-artifact@") || !strings.HasPrefix(last.If, "always()") ||
		last.With["path"] != "${{ steps.run.outputs.junit }}" {
		t.Errorf("the last step does not upload the JUnit report always: %+v", last)
	}
	if last.With["name"] != "${{ steps.run.outputs.artifact-name }}" || last.With["overwrite"] != "true" {
		t.Errorf("the upload's name is %q and overwrite %q, want run.sh's name and true", last.With["name"], last.With["overwrite"])
	}
}
