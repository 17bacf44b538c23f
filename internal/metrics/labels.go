package metrics

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// labelName is the classic Prometheus label name syntax, which every
// Pushgateway and node_exporter accepts.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Labels are the key=value pairs a user adds to every metric: the
// grouping key of a push, constant labels on /metrics and in the
// textfile.
type Labels map[string]string

// Set parses one key=value and adds it (flag.Value).
func (l *Labels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q: want key=value", s)
	}
	if err := checkLabelName(k); err != nil {
		return err
	}
	if *l == nil {
		*l = Labels{}
	}
	if _, dup := (*l)[k]; dup {
		return fmt.Errorf("label %q given twice", k)
	}
	(*l)[k] = v
	return nil
}

// String lists the labels as key=value pairs (flag.Value).
func (l *Labels) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	for k, v := range *l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func checkLabelName(k string) error {
	switch {
	case !labelName.MatchString(k):
		return fmt.Errorf("label name %q: want letters, digits and underscores, not starting with a digit", k)
	case strings.HasPrefix(k, reservedLabelPref):
		return fmt.Errorf("label name %q: names starting with __ are reserved", k)
	case k == reservedLabelJob:
		return errors.New(`label name "job" is reserved: runs are pushed as job="writewatch"`)
	case k == labelOp || k == labelAction || k == labelCause || k == labelMode || k == labelVersion || k == labelProgram || k == labelSeverity:
		return fmt.Errorf("label name %q is taken by writewatch's own metrics", k)
	}
	return nil
}
