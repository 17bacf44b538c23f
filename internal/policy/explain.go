package policy

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/writewatch/writewatch/internal/allowlist"
)

// Describe says in one line how an entry is enforced under tier; a tier
// that cannot refuse kills the writer instead.
func (e EntryPlan) Describe(tier Tier) string {
	var s string
	switch e.How {
	case Exact:
		s = "exact"
	case Narrowed:
		s = fmt.Sprintf("narrowed to the safe side: granted around the deny entries inside it (%d paths); new names next to a denied path are refused", e.Grants)
	case Expanded:
		s = fmt.Sprintf("a glob: only the %d paths matching it at start are granted; new matches are refused", e.Grants)
	case Missing:
		s = "missing at start: writes there are refused (create it before the run, or end the entry with / to have it made)"
		if e.Entry.NamesDir() && plainPath(e.Entry.Pattern) {
			s = "missing at start: made before the run (the entry ends in /), then granted whole"
		}
	case Inexpressible:
		s = "not enforceable (no literal directory to start from): writes it allows are refused"
	case Truncated:
		s = fmt.Sprintf("more than %d paths to look at: what was not looked at is refused", MaxVisits)
	case DenyExact:
		s = "exact: nothing it names is granted"
	case TooMany:
		s = fmt.Sprintf("more than %d grants in all, more than the kernel is given: only %d of its paths are granted, writes to the rest are refused", maxGrants, e.Grants)
	}
	if !tier.Refuses() {
		s = strings.ReplaceAll(s, "are refused", "kill the writer")
		s = strings.ReplaceAll(s, "is refused", "kills the writer")
	}
	return s
}

// WriteExplain writes, for --print-config, which tier --enforce would use,
// the directories it would make for COMMAND (dirs may be nil), and how
// each entry is enforced under it.
func WriteExplain(w io.Writer, p *Plan, tier Tier, why string, dirs *Dirs) error {
	fmt.Fprintf(w, "\nunder --enforce: tier %s (%s)\n", tier, why)
	fmt.Fprintln(w, "  "+tier.Explain())
	if dirs != nil {
		for _, line := range dirs.Explain() {
			fmt.Fprintln(w, "  "+line)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tPATTERN\tENFORCED")
	for _, e := range p.Entries {
		kind := "allow"
		if e.Entry.Kind == allowlist.Deny {
			kind = "deny"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", kind, e.Entry.Pattern, e.Describe(tier))
	}
	return tw.Flush()
}
