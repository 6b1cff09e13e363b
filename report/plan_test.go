package report

import (
	"strings"
	"testing"

	"github.com/openmrc/mrc/plan"
)

// TestWritePlan: one design renders as its table, with counts in
// thousands, speeds in G/T, failure shares as percentages, and the
// summary line last.
func TestWritePlan(t *testing.T) {
	d, err := plan.Build(plan.Params{GPUs: 65536, Planes: 8, NICGbps: 800, SwitchGbps: 51200}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WritePlan(&b, &d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"65,536 GPUs, one 800G NIC each, 51.2T switches, full bisection\n",
		"12.5% (1/8)",
		"2,048 (256/plane)",
		"\nsummary: two-tier, 8 planes: 3,072 switches, 262,144 optics in 800G units, longest path 3 switches\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "longest path 3 switches\n") {
		t.Errorf("output does not end with the summary:\n%s", out)
	}
}

// TestWritePlanComparisonEmpty: a comparison with no design is an error,
// not a panic.
func TestWritePlanComparisonEmpty(t *testing.T) {
	var b strings.Builder
	if err := WritePlanComparison(&b, &plan.Comparison{GPUs: 1 << 20}); err == nil {
		t.Errorf("no error for a comparison without designs; wrote %q", b.String())
	}
}
