package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/tracer"
)

// A Tier is one mechanism that enforces the allowlist. Each tier is one
// file of this package, which registers it, plus the BPF it needs: the
// automatic choice and --enforce-with go through the registered tiers.
type Tier interface {
	// String is the tier's name, for --enforce-with and the report, and
	// for the BPF programs: enum ww_tier (bpf/writewatch.h) holds
	// WW_TIER_<NAME> for it.
	String() string
	// Probe says whether the tier can enforce on this machine: why it
	// can (or ""), or an error saying why not. s is what Probe found; a
	// tier may look further itself.
	Probe(s *Support) (why string, err error)
	// Kernel sets in o what the tier needs of the BPF programs beyond
	// its name, the grants and whether to kill.
	Kernel(o *tracer.EnforceOptions)
	// Launch returns the Landlock ruleset COMMAND starts under, or nil.
	Launch(e *Enforcement) *launch.Landlock
	// Explain says in one line, for --print-config, how the tier
	// enforces.
	Explain() string
	// Refuses says whether the tier can refuse a write. One that cannot
	// only kills the writer: --enforce=block cannot use it.
	Refuses() bool
	// Note says what the tier cannot prevent, for the report and a
	// warning at start; "" when nothing.
	Note() string
	// LostRefusals is how many writes the kernel acted on (its own
	// counts, in st) whose records never arrived, the ring buffer being
	// full; seen counts the records that did.
	LostRefusals(st tracer.Stats, seen Refusals) uint64
}

type registered struct {
	tier     Tier
	strength int
}

// tiers are the registered tiers, strongest first.
var tiers []registered

// register adds a tier. strength orders the tiers for the automatic
// choice, which takes the strongest one available.
func register(strength int, t Tier) {
	tiers = append(tiers, registered{t, strength})
	slices.SortStableFunc(tiers, func(a, b registered) int { return b.strength - a.strength })
}

// ParseTier reads the value of --enforce-with: a tier name, or "" or
// "auto" for the strongest this kernel offers (returned as nil).
func ParseTier(s string) (Tier, error) {
	if s == "" || s == "auto" {
		return nil, nil
	}
	var names []string
	for _, r := range tiers {
		if r.tier.String() == s {
			return r.tier, nil
		}
		names = append(names, r.tier.String())
	}
	return nil, fmt.Errorf("--enforce-with %q: want %s or auto", s, strings.Join(names, ", "))
}

// Choose picks the tier: forced when not nil, else the strongest
// available. why explains the choice; an error means the forced tier is
// not available here.
func (s *Support) Choose(forced Tier) (tier Tier, why string, err error) {
	if forced != nil {
		why, err := forced.Probe(s)
		if err != nil {
			return nil, "", fmt.Errorf("--enforce-with %s: %w", forced, err)
		}
		return forced, joinWhy("forced by --enforce-with", why), nil
	}
	var whys []string
	for _, r := range tiers {
		why, err := r.tier.Probe(s)
		if err != nil {
			whys = append(whys, err.Error())
			continue
		}
		return r.tier, joinWhy(append(whys, why)...), nil
	}
	return nil, "", errors.New("no enforcement tier is available here: " + joinWhy(whys...))
}

// joinWhy joins the reasons that are not empty.
func joinWhy(whys ...string) string {
	return strings.Join(slices.DeleteFunc(whys, func(s string) bool { return s == "" }), "; ")
}

// lost is how many of the counted kernel actions left no record, when
// seen records arrived.
func lost(counted, seen uint64) uint64 { return counted - min(counted, seen) }
