package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

var (
	lsm      Tier = lsmTier{}
	landlock Tier = landlockTier{}
	kill     Tier = killTier{}
)

// Each tier is declared once: enum ww_tier in the BPF objects the tracer
// loads holds WW_TIER_<NAME> for every registered tier, and nothing else
// but WW_TIER_NONE.
func TestTiersMatchTheBPFEnum(t *testing.T) {
	objs, err := filepath.Glob("../../tracer/*_bpfel.o")
	if err != nil || len(objs) == 0 {
		t.Fatalf("no BPF objects in ../../tracer: %v", err)
	}
	var enum *btf.Enum
	for _, obj := range objs {
		spec, err := btf.LoadSpec(obj)
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		if spec.TypeByName("ww_tier", &enum) == nil {
			break
		}
	}
	if enum == nil {
		t.Fatalf("no enum ww_tier in %v", objs)
	}
	var inC, inGo []string
	for _, v := range enum.Values {
		if v.Name != "WW_TIER_NONE" {
			inC = append(inC, v.Name)
		}
	}
	for _, r := range tiers {
		inGo = append(inGo, "WW_TIER_"+strings.ToUpper(r.tier.String()))
	}
	slices.Sort(inC)
	slices.Sort(inGo)
	if !slices.Equal(inC, inGo) {
		t.Errorf("enum ww_tier has %v, the registered tiers are %v", inC, inGo)
	}
}

// The tiers are tried strongest first, and each name is taken once.
func TestRegisteredTiers(t *testing.T) {
	var names []string
	for _, r := range tiers {
		names = append(names, r.tier.String())
	}
	if !slices.Equal(names, []string{"lsm", "landlock", "kill"}) {
		t.Errorf("tiers %v, want lsm, landlock, kill", names)
	}
}

func TestParseTier(t *testing.T) {
	for s, want := range map[string]Tier{"": nil, "auto": nil, "lsm": lsm, "landlock": landlock, "kill": kill} {
		if got, err := ParseTier(s); got != want || err != nil {
			t.Errorf("ParseTier(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	_, err := ParseTier("bogus")
	if err == nil || err.Error() != `--enforce-with "bogus": want lsm, landlock, kill or auto` {
		t.Errorf("ParseTier(bogus): %v", err)
	}
}

func TestChoose(t *testing.T) {
	s := &Support{LSMs: []string{"landlock"}, BPFLSMErr: os.ErrPermission, LandlockABI: 2}
	for _, tc := range []struct {
		abi       int
		bpfLSMErr error
		forced    Tier
		want      Tier
		why, err  string
	}{
		{2, os.ErrPermission, nil, kill, "BPF LSM unavailable: permission denied; Landlock ABI 2 is older than 3, which restricts truncate(2)", ""},
		{2, os.ErrPermission, landlock, nil, "", "--enforce-with landlock: Landlock ABI 2 is older than 3, which restricts truncate(2)"},
		{2, os.ErrPermission, lsm, nil, "", "--enforce-with lsm: BPF LSM unavailable: permission denied"},
		{7, os.ErrPermission, nil, landlock, "BPF LSM unavailable: permission denied; Landlock ABI 7", ""},
		{7, os.ErrPermission, landlock, landlock, "forced by --enforce-with; Landlock ABI 7", ""},
		{7, nil, nil, lsm, "BPF LSM programs load here", ""},
		{7, nil, lsm, lsm, "forced by --enforce-with; BPF LSM programs load here", ""},
		{7, nil, kill, kill, "forced by --enforce-with", ""},
	} {
		s.LandlockABI, s.BPFLSMErr = tc.abi, tc.bpfLSMErr
		tier, why, err := s.Choose(tc.forced)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if tier != tc.want || why != tc.why || gotErr != tc.err {
			t.Errorf("ABI %d, BPF LSM %v, forced %v: %v (%q) %q; want %v (%q) %q",
				tc.abi, tc.bpfLSMErr, tc.forced, tier, why, gotErr, tc.want, tc.why, tc.err)
		}
	}
	s.LandlockErr, s.LandlockABI, s.BPFLSMErr = os.ErrNotExist, 0, os.ErrPermission
	if _, why, _ := s.Choose(nil); !strings.Contains(why, "Landlock unavailable: file does not exist") {
		t.Errorf("no Landlock: %q", why)
	}
}

func TestDescribeKillSaysKill(t *testing.T) {
	e := EntryPlan{How: Missing}
	if s := e.Describe(kill); !strings.Contains(s, "kill the writer") {
		t.Errorf("kill tier: %q", s)
	}
	if s := e.Describe(landlock); !strings.Contains(s, "refused") {
		t.Errorf("landlock tier: %q", s)
	}
}

// A tier that cannot refuse says what it cannot prevent; one that can
// has nothing to add.
func TestNoteOfATierThatCannotRefuse(t *testing.T) {
	for _, r := range tiers {
		if r.tier.Refuses() == (r.tier.Note() != "") {
			t.Errorf("%s: refuses %v, note %q", r.tier, r.tier.Refuses(), r.tier.Note())
		}
	}
}

// Only the landlock tier starts COMMAND under a ruleset: every write
// right on every grant, but for making a block device's node, handled
// and granted nowhere.
func TestLaunchRules(t *testing.T) {
	e := &Enforcement{Plan: &Plan{Grants: []Grant{{Path: "/a", Dir: true}, {Path: "/b/f"}}}, Support: Support{LandlockABI: 3}}
	for _, tier := range []Tier{lsm, kill} {
		if l := tier.Launch(e); l != nil {
			t.Errorf("%s: a ruleset %v", tier, l)
		}
	}
	e.Tier = landlock
	l := e.Landlock()
	if l == nil || len(l.Rules) != 2 || l.Rules[0].Path != "/a" || l.Rules[1].Path != "/b/f" {
		t.Fatalf("landlock ruleset %+v", l)
	}
	noBlock := l.Handled &^ unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	if l.Handled&unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK == 0 || l.Rules[0].Access != noBlock || l.Rules[1].Access != noBlock&launch.LandlockFileRights {
		t.Errorf("rules %+v, handled %#x: want every right but making a block device on the directory, the file rights on the file", l.Rules, l.Handled)
	}
}

func TestKernelOptions(t *testing.T) {
	root := tree(t, "d/", "d/denied")
	plan := &Plan{Grants: []Grant{{Path: root + "/d", Dir: true}}, Denied: []string{root + "/d/denied", root + "/gone"}}
	for _, tc := range []struct {
		tier Tier
		kill bool
		lsm  bool
	}{{lsm, true, true}, {landlock, false, false}, {kill, true, false}} {
		e := &Enforcement{Tier: tc.tier, Kill: tc.kill, Plan: plan}
		marks, o := e.Kernel()
		if o.Tier != tc.tier.String() || o.Kill != tc.kill || o.LSM != tc.lsm {
			t.Errorf("%s: options %+v", tc.tier, o)
		}
		if !slices.Equal(o.Prefixes, []string{root + "/d/"}) || !slices.Equal(o.Exact, []string{root + "/d"}) {
			t.Errorf("%s: prefixes %v, exact %v", tc.tier, o.Prefixes, o.Exact)
		}
		if len(marks) != 2 || marks[0].Kind != tracer.MarkAllow|tracer.MarkFinal || marks[1].Kind != tracer.MarkDeny {
			t.Errorf("%s: marks %v", tc.tier, marks)
		}
	}
}

// A refusal the kernel counted whose record a full ring buffer lost is
// found from the tier's own count.
func TestLostRefusals(t *testing.T) {
	st := tracer.Stats{Blocked: 10, Killed: 7, Unmarked: 3}
	seen := Refusals{Blocked: 4, Killed: 5}
	for tier, want := range map[Tier]uint64{
		lsm:      3, // 10 refused, 3 of them of syscalls not recorded, 4 seen
		landlock: 6,
		kill:     2,
	} {
		if got := tier.LostRefusals(st, seen); got != want {
			t.Errorf("%s: %d lost, want %d", tier, got, want)
		}
	}
	// More records than the kernel's count (a count read early) is no loss.
	if got := kill.LostRefusals(tracer.Stats{Killed: 1}, Refusals{Killed: 2}); got != 0 {
		t.Errorf("kill, more seen than counted: %d lost", got)
	}
}

func TestRefusalsAndActionNames(t *testing.T) {
	var r Refusals
	for bits, want := range map[uint32]string{
		0: "reported", tracer.ActionBlocked: "blocked", tracer.ActionKilled: "killed",
		tracer.ActionBlocked | tracer.ActionKilled: "blocked+killed",
	} {
		if got := Action(bits); got != want {
			t.Errorf("Action(%d) = %q, want %q", bits, got, want)
		}
		r.Count(bits)
	}
	if r != (Refusals{Blocked: 2, Killed: 2}) {
		t.Errorf("refusals %+v", r)
	}
}
