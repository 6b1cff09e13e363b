package plan

import (
	"math"
	"testing"

	"github.com/openmrc/mrc/faults"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestPowerArithmetic checks every power figure against the counts and the
// documented defaults, by hand, at 65,536 GPUs.
func TestPowerArithmetic(t *testing.T) {
	c, err := Compare(Params{GPUs: 65536, Planes: 8, NICGbps: 800, SwitchGbps: 51200})
	if err != nil {
		t.Fatal(err)
	}
	two, three := c.TwoTier, c.ThreeTier
	// Two tiers, 8 planes of 100G, radix 512: per plane 256 T0 + 128 T1.
	if two.Total.Switches != 3072 || two.Total.Transceivers != 2*(524288+524288) {
		t.Fatalf("two-tier counts %+v", two.Total)
	}
	w := two.Power
	if w.SwitchW != 913 || w.TransceiverW != 2 || w.NICPortW != 25.0/8 {
		t.Errorf("two-tier unit figures %+v, want 913 W, 2 W (100/800 of 16 W), 3.125 W", w)
	}
	if !near(w.SwitchesKW, 3072*0.913) || !near(w.OpticsKW, 2097152*2/1000.0) || !near(w.FabricKW, w.SwitchesKW+w.OpticsKW) ||
		!near(w.NICsKW, 65536*0.025) || !near(w.TotalKW, w.FabricKW+w.NICsKW) || !near(w.FabricWPerGPU, 1000*w.FabricKW/65536) {
		t.Errorf("two-tier power %+v", w)
	}
	// Three tiers, one plane of 800G, radix 64: 2048 T0 + 2048 T1 + 1024 T2.
	if three.Total.Switches != 5120 || three.Total.Transceivers != 2*3*65536 {
		t.Fatalf("three-tier counts %+v", three.Total)
	}
	if w3 := three.Power; w3.TransceiverW != 16 || !near(w3.FabricKW, 5120*0.913+393216*0.016) {
		t.Errorf("three-tier power %+v", w3)
	}
	if c.FabricPower == nil || !near(c.FabricPower.Value, w.FabricKW/three.Power.FabricKW) {
		t.Fatalf("fabric power ratio %+v", c.FabricPower)
	}
	if two.Power.FabricKW >= three.Power.FabricKW {
		t.Errorf("two-tier 8-plane draws %.0f kW, three-tier single-plane %.0f kW: want less", two.Power.FabricKW, three.Power.FabricKW)
	}
	if two.Reliability.TransceiversPerGPU != 32 || three.Reliability.TransceiversPerGPU != 6 {
		t.Errorf("transceivers per GPU %v and %v, want 32 and 6", two.Reliability.TransceiversPerGPU, three.Reliability.TransceiversPerGPU)
	}
}

// TestPowerFlags checks that each figure is a parameter and that bad ones
// are refused.
func TestPowerFlags(t *testing.T) {
	d, err := TwoTier(Params{GPUs: 4096, Planes: 4, NICGbps: 800, SwitchGbps: 51200, SwitchW: 1000, OpticW: 20, NICW: 40})
	if err != nil {
		t.Fatal(err)
	}
	if w := d.Power; w.SwitchW != 1000 || w.TransceiverW != 5 || w.NICPortW != 10 {
		t.Errorf("power %+v, want 1000 W, 5 W (200/800 of 20 W), 10 W", w)
	}
	// Half the switch capacity: half the default switch power.
	d, err = TwoTier(Params{GPUs: 4096, Planes: 8, NICGbps: 800, SwitchGbps: 25600})
	if err != nil {
		t.Fatal(err)
	}
	if d.Power.SwitchW != 456.5 {
		t.Errorf("25.6T switch %v W, want 456.5", d.Power.SwitchW)
	}
	for _, f := range []string{"switch_w", "optic_w", "nic_w"} {
		p := Params{GPUs: 4096, Planes: 8, NICGbps: 800, SwitchGbps: 51200}
		*map[string]*float64{"switch_w": &p.SwitchW, "optic_w": &p.OpticW, "nic_w": &p.NICW}[f] = -1
		_, err := TwoTier(p)
		if pe, ok := err.(*ParamError); !ok || pe.Field != f {
			t.Errorf("%s -1: error %v, want a ParamError on %s", f, err, f)
		}
	}
}

// TestExpectedFailures checks the failures per day against the table:
// n · 24 h / MTBF per class, and twice the GPUs twice the failures.
func TestExpectedFailures(t *testing.T) {
	tb := faults.Defaults()
	var prev float64
	for _, gpus := range []int{32768, 65536} {
		d, err := TwoTier(Params{GPUs: gpus, Planes: 8, NICGbps: 800, SwitchGbps: 51200})
		if err != nil {
			t.Fatal(err)
		}
		r := d.Reliability
		sum := 0.0
		for _, c := range r.Classes {
			want := float64(c.Components) * 24 / (float64(tb[c.Class].MTBF) / 3.6e12)
			if !near(c.PerDay, want) {
				t.Errorf("%d GPUs, %s: %v a day, want %v", gpus, c.Class, c.PerDay, want)
			}
			sum += c.PerDay
		}
		if len(r.Classes) != 5 || !near(sum, r.PerDay) || r.Components != d.Inventory().Total() {
			t.Errorf("%d GPUs: %+v", gpus, r)
		}
		if prev != 0 && !near(r.PerDay, 2*prev) {
			t.Errorf("%d GPUs: %v failures a day, want twice %v", gpus, r.PerDay, prev)
		}
		prev = r.PerDay
	}
}
