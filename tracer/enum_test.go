package tracer

import "testing"

// EnforceOptions.Tier names an enumerator of enum ww_tier; the loader
// finds its value in the programs' BTF.
func TestEnumValue(t *testing.T) {
	spec, err := loadWritewatch()
	if err != nil {
		t.Fatal(err)
	}
	v, err := enumValue(spec, "ww_tier", "WW_TIER_KILL")
	if err != nil || v != uint32(writewatchWwTierWW_TIER_KILL) {
		t.Errorf("WW_TIER_KILL = %d, %v; want %d", v, err, writewatchWwTierWW_TIER_KILL)
	}
	if _, err := enumValue(spec, "ww_tier", "WW_TIER_BOGUS"); err == nil {
		t.Error("WW_TIER_BOGUS found")
	}
}
