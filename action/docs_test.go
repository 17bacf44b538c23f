package action

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// metadata is what the tests read of action.yml.
type metadata struct {
	Inputs map[string]struct {
		Default  *string `yaml:"default"`
		Required bool    `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct{ Value string } `yaml:"outputs"`
	Runs    struct {
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

func readMetadata(t *testing.T) metadata {
	t.Helper()
	data, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var m metadata
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return m
}

// codeBlocks returns the text of the fenced blocks of language lang in
// the Markdown file at path.
func codeBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// mdTable returns the rows of the Markdown table at path whose header's
// first cell is first, each as its cells, trimmed.
func mdTable(t *testing.T, path, first string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in && cells[0] == first:
			in = true
		case in && strings.HasPrefix(cells[0], "---"):
		case in:
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table headed %q", path, first)
	}
	return rows
}

// The inputs and outputs docs/ci.md lists are action.yml's, with its
// defaults.
func TestDocsListTheActionsInputsAndOutputs(t *testing.T) {
	m := readMetadata(t)
	var inputs, outputs []string
	for _, row := range mdTable(t, "../docs/ci.md", "input") {
		name := strings.Trim(row[0], "`")
		inputs = append(inputs, name)
		in, ok := m.Inputs[name]
		if !ok {
			t.Errorf("docs/ci.md lists the input %s, which action.yml does not declare", name)
			continue
		}
		want := "(required)"
		if !in.Required {
			want = "`''`"
			if in.Default != nil && *in.Default != "" {
				want = "`" + *in.Default + "`"
			}
		}
		if row[1] != want {
			t.Errorf("docs/ci.md gives the input %s the default %s; action.yml: %s", name, row[1], want)
		}
	}
	for _, row := range mdTable(t, "../docs/ci.md", "output") {
		outputs = append(outputs, strings.Trim(row[0], "`"))
	}
	for name := range m.Inputs {
		if !slices.Contains(inputs, name) {
			t.Errorf("docs/ci.md does not list the input %s", name)
		}
	}
	for name := range m.Outputs {
		if !slices.Contains(outputs, name) {
			t.Errorf("docs/ci.md does not list the output %s", name)
		}
	}
	for _, name := range outputs {
		if _, ok := m.Outputs[name]; !ok {
			t.Errorf("docs/ci.md lists the output %s, which action.yml does not declare", name)
		}
	}
}

// Every use of the action that README.md and docs/ give passes the
// inputs action.yml declares, and the ones it requires; and no page says
// to go install writewatch from a module path, which is not published.
func TestDocsUseTheAction(t *testing.T) {
	m := readMetadata(t)
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	uses := 0
	remote := regexp.MustCompile(`go install +[^ .]\S*writewatch`)
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if s := remote.FindString(string(data)); s != "" {
			t.Errorf("%s says %q: the module is not published; build from a clone", page, s)
		}
		for _, block := range codeBlocks(t, page, "yaml") {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
				t.Errorf("%s: a yaml block does not parse: %v\n%s", page, err, block)
				continue
			}
			for _, with := range actionUses(&doc) {
				uses++
				checkWith(t, page, m, with)
			}
		}
	}
	if uses == 0 {
		t.Error("no page shows the action's uses: form")
	}
}

// actionUses returns the with: of each step in n that uses the action
// (uses: OWNER/writewatch@REF), an empty map for one without.
func actionUses(n *yaml.Node) []map[string]string {
	var found []map[string]string
	if n.Kind == yaml.MappingNode {
		var uses string
		with := map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k, v := n.Content[i], n.Content[i+1]; k.Value {
			case "uses":
				uses = v.Value
			case "with":
				_ = v.Decode(&with)
			}
		}
		if strings.Contains(uses, "/writewatch@") {
			found = append(found, with)
		}
	}
	for _, c := range n.Content {
		found = append(found, actionUses(c)...)
	}
	return found
}

func checkWith(t *testing.T, page string, m metadata, with map[string]string) {
	t.Helper()
	for name := range with {
		if _, ok := m.Inputs[name]; !ok {
			t.Errorf("%s gives the action the input %s, which action.yml does not declare", page, name)
		}
	}
	for name, in := range m.Inputs {
		if _, ok := with[name]; in.Required && !ok {
			t.Errorf("%s uses the action without its required input %s", page, name)
		}
	}
}
