package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/writewatch/writewatch/internal/render"
)

// The command line is read by parseArgs, not by flag.FlagSet.Parse: the
// flag set holds the flags and their values, and parseArgs says what went
// wrong in the words a user types (--grace 5, not -grace), and whether --
// ended the flags.

// parseArgs sets the flags of fs from argv: each as -name or --name, its
// value after = or, for a flag that is not boolean, as the next argument.
// The flags end at the first argument that is not one (COMMAND) or at --,
// which is dropped and reported by dashdash. -h, -help and --help return
// flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, argv []string) (args []string, dashdash bool, err error) {
	for i := 0; i < len(argv); i++ {
		s := argv[i]
		switch {
		case s == "--":
			return argv[i+1:], true, nil
		case len(s) < 2 || s[0] != '-':
			return argv[i:], false, nil
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(s[1:], "-"), "=")
		if name == "" || name[0] == '-' {
			return nil, false, fmt.Errorf("%s is no flag: flags are written --name or --name=value", s)
		}
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				return nil, false, flag.ErrHelp
			}
			return nil, false, fmt.Errorf("unknown flag --%s", name)
		}
		if isBool(f) {
			if !hasValue {
				value = "true"
			}
			if err := fs.Set(name, value); err != nil {
				return nil, false, fmt.Errorf("--%s=%s: %w", name, value, err)
			}
			continue
		}
		if !hasValue {
			if i+1 == len(argv) {
				return nil, false, fmt.Errorf("--%s needs a value: --%s %s", name, name, argName(f))
			}
			i++
			value = argv[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, false, fmt.Errorf("--%s %s: %s", name, value, valueError(f, value, err))
		}
	}
	return nil, false, nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// argName is what a flag's value is called in the help: FILE, N...
func argName(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	return name
}

// valueError says what a flag wants instead of value: the flag package's
// own values answer only "parse error".
func valueError(f *flag.Flag, value string, err error) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		want := "want a duration such as 500ms or 2s"
		if strings.Trim(value, "0123456789.") == "" && value != "" {
			want += " (" + value + "s?)"
		}
		return want
	case int, uint:
		return "want a whole number"
	}
	return err.Error()
}

// boolValue is a boolean flag with a message of its own for a value other
// than true or false.
type boolValue struct {
	p    *bool
	name string
}

func (b boolValue) IsBoolFlag() bool { return true }

func (b boolValue) String() string {
	if b.p == nil || !*b.p {
		return "false"
	}
	return "true"
}

func (b boolValue) Get() any { return *b.p }

func (b boolValue) Set(s string) error {
	switch s {
	case "true":
		*b.p = true
	case "false":
		*b.p = false
	default:
		return errors.New("want --" + b.name + ", --" + b.name + "=true or --" + b.name + "=false")
	}
	return nil
}

// helpLine is one line of the help's flags: a flag, or a form of one
// (--enforce=block) with its own meaning.
type helpLine struct {
	flag       string // the flag's name, whose usage is the line
	form, text string // else: the form, and what it does
}

// formatLines are the report formats' flags (render.Formats), as the
// help lists them.
func formatLines() []helpLine {
	var lines []helpLine
	for _, f := range render.Formats() {
		lines = append(lines, helpLine{flag: f.Name})
	}
	return lines
}

// helpGroups are the flags as the help groups them, each group with a
// note; every flag is in one (TestHelpShowsEveryFlag).
var helpGroups = []struct {
	title, note string
	lines       []helpLine
}{
	{"Mode", "By default writewatch reports, and exits with 86 when anything was written outside the allowlist.", []helpLine{
		{flag: "audit"},
		{flag: "sandbox"},
		{flag: "sandbox-keep"},
		{flag: "enforce"},
		{form: "--enforce=block", text: "refuse them, but let the writer live"},
		{flag: "enforce-with"},
		{flag: "accept-incomplete"},
	}},
	{"Allowlist", "", []helpLine{
		{flag: "config"},
		{flag: "allow"},
		{flag: "ignore-metadata"},
		{flag: "print-config"},
	}},
	{"Reports", "Each FILE goes in a directory of your own: a shared one, such as /tmp, is refused (unless COMMAND runs as root), as a test could plant a link there.",
		append(formatLines(), helpLine{flag: "suggest-config"}, helpLine{flag: "baseline"}, helpLine{flag: "quiet"}, helpLine{flag: "max-violations"})},
	{"COMMAND", "", []helpLine{
		{flag: "as-root"},
		{flag: "grace"},
		{flag: "kill-survivors"},
		{flag: "ringbuf-mib"},
	}},
	{"Metrics (Prometheus)", `An output given "" is off (--pushgateway "$URL" with URL unset).`, []helpLine{
		{flag: "metrics-addr"},
		{flag: "pushgateway"},
		{flag: "metrics-label"},
		{flag: "metrics-textfile"},
		{flag: "metrics-required"},
	}},
	{"Other", "", []helpLine{
		{flag: "doctor"},
		{flag: "version"},
		{form: "--help", text: "print this help"},
	}},
}

const helpHead = `Usage: writewatch [flags] [--] COMMAND [ARGS...]
       writewatch --print-config [--config FILE] [--allow PATTERN]...
       writewatch --doctor

Runs COMMAND, follows every process it starts in the kernel (eBPF), and
reports every filesystem write outside the allowlist in .writewatch.yaml
(found by walking up from the working directory).

Flags come before COMMAND. Put -- between them when a flag's value could
be taken for COMMAND: writewatch --json report.json -- go test ./...
A flag without a value also takes =true or =false (--audit=false).
`

const helpExitCodes = `Exit codes:
  COMMAND's own  nothing outside the allowlist was written (or --audit)
  128+N          COMMAND died of signal N
  2              usage or configuration error; COMMAND was not started
  70             writewatch failed while COMMAND ran (the report says what),
                 or --json, --junit, --suggest-config, --metrics-textfile or
                 (with --metrics-required) the push to --pushgateway could
                 not be written
  86             writes outside the allowlist were found (with --enforce:
                 tried)
  87             cannot trace here: no privileges, no BTF, kernel too old, or
                 the enforcement or the sandbox asked for is not available
                 or was refused
  88             writewatch could not see everything (records lost, processes
                 not followed...): the verdict is unknown; the report says why
                 (--accept-incomplete gives COMMAND's own code instead)
  126            COMMAND is not executable
  127            COMMAND was not found
`

// Help's layout: the flags' column, and the width lines wrap at.
const (
	helpIndent = "  "
	helpColumn = 29
	helpWidth  = 80
)

// helpText is --help: the usage, the flags by group, the exit codes.
func helpText(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(helpHead)
	for _, g := range helpGroups {
		b.WriteString("\n" + g.title + ":\n")
		if g.note != "" {
			writeWrapped(&b, helpIndent, helpIndent, g.note)
		}
		for _, l := range g.lines {
			form, text := l.form, l.text
			if l.flag != "" {
				f := fs.Lookup(l.flag)
				name, usage := flag.UnquoteUsage(f)
				form = "--" + f.Name
				if name != "" {
					form += " " + name
				}
				text = usage
				if hasDefault(f) {
					text += "; default " + f.DefValue
				}
			}
			first := helpIndent + form
			if len(first) < helpColumn {
				first += strings.Repeat(" ", helpColumn-len(first))
			} else {
				first += "  "
			}
			writeWrapped(&b, first, strings.Repeat(" ", helpColumn), text)
		}
	}
	b.WriteString("\n")
	b.WriteString(helpExitCodes)
	return b.String()
}

// hasDefault: the flag's default is a number or a duration worth
// showing (a string's is said in its usage, when it has one).
func hasDefault(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	switch g.Get().(type) {
	case int, uint, time.Duration:
		return f.DefValue != "0"
	}
	return false
}

// writeWrapped writes text in lines of at most helpWidth characters where
// it can, the first after first, the others after then.
func writeWrapped(b *strings.Builder, first, then, text string) {
	line := first
	start := len(first)
	for _, word := range strings.Fields(text) {
		if len(line) > start && len(line)+1+len(word) > helpWidth {
			b.WriteString(line + "\n")
			line, start = then, len(then)
		}
		if len(line) > start {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
}
