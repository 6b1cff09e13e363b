package faults

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// storm is a process over a 1,024-GPU × 4-plane fabric's parts, compressed
// so that one window sees about 150 failures.
func storm(scale int, compress float64) Process {
	inv := Inventory{NICPort: 4096 * scale, HostLink: 4096 * scale, T0T1: 4096 * scale, T0: 32 * scale, T1: 16 * scale}
	return Process{Table: Defaults(), Inventory: inv, From: 100 * time.Microsecond, To: 1100 * time.Microsecond, Compress: compress}
}

// draws sums the counts per class and per kind over seeds.
func draws(p Process, seeds int) (total int, byClass map[Class]int, byKind map[Class]map[Kind]int) {
	byClass, byKind = map[Class]int{}, map[Class]map[Kind]int{}
	for seed := range uint64(seeds) {
		ev := p.Draw(rand.New(rand.NewPCG(seed, 7)))
		total += len(ev)
		for i, e := range ev {
			if e.At < p.From || e.At >= p.To || e.Index < 0 || e.Index >= p.Inventory[e.Class] {
				panic("event out of range")
			}
			if i > 0 && e.At < ev[i-1].At {
				panic("events out of order")
			}
			byClass[e.Class]++
			if byKind[e.Class] == nil {
				byKind[e.Class] = map[Kind]int{}
			}
			byKind[e.Class][e.Kind]++
		}
	}
	return total, byClass, byKind
}

func within3Sigma(t *testing.T, what string, got int, want, variance float64) {
	t.Helper()
	if d := math.Abs(float64(got) - want); d > 3*math.Sqrt(variance) {
		t.Errorf("%s: %d, want %.1f ± %.1f (3σ)", what, got, want, 3*math.Sqrt(variance))
	}
}

const compressUnit = 2e8 // with the factors below, 20 to 100 failures a window

func TestDrawCountIsPoisson(t *testing.T) {
	p := storm(1, compressUnit*50)
	const seeds = 200
	total, byClass, byKind := draws(p, seeds)
	want := 0.0
	for _, c := range Classes {
		e := p.Expected(c) * seeds
		want += e
		// A Poisson count's variance is its mean.
		within3Sigma(t, "count of "+string(c), byClass[c], e, e)
		n := float64(byClass[c])
		r := p.Table[c]
		for k, share := range map[Kind]float64{Down: r.Mix.Down, Flap: r.Mix.Flap, Blackhole: r.Mix.Blackhole, Reboot: r.Mix.Reboot} {
			// Given the class's count, a kind's count is binomial.
			within3Sigma(t, string(c)+" "+string(k), byKind[c][k], n*share, n*share*(1-share))
		}
	}
	if want < 1000 {
		t.Fatalf("expected %v failures over %d seeds: too few for the test to mean anything", want, seeds)
	}
	within3Sigma(t, "total", total, want, want)
	// Per seed, the spread is Poisson too: the sample variance is near
	// the mean (a wrong process, say a fixed count, fails this).
	mean, m2 := 0.0, 0.0
	for seed := range uint64(seeds) {
		n := float64(len(p.Draw(rand.New(rand.NewPCG(seed, 7)))))
		mean += n
		m2 += n * n
	}
	mean /= seeds
	v := m2/seeds - mean*mean
	if v < 0.6*mean || v > 1.4*mean {
		t.Errorf("per-window variance %.1f, mean %.1f: not Poisson", v, mean)
	}
}

func TestDrawScalesWithHostsAndCompress(t *testing.T) {
	const seeds = 100
	base := storm(1, compressUnit*10)
	e1 := 0.0
	for _, c := range Classes {
		e1 += base.Expected(c)
	}
	for _, tc := range []struct {
		name   string
		p      Process
		factor float64
	}{
		{"double the hosts", storm(2, compressUnit*10), 2},
		{"compress ×4", storm(1, compressUnit*40), 4},
	} {
		e := 0.0
		for _, c := range Classes {
			e += tc.p.Expected(c)
		}
		if math.Abs(e-tc.factor*e1) > 1e-9*e {
			t.Errorf("%s: expected %v failures, want %v × %v", tc.name, e, tc.factor, e1)
		}
		got, _, _ := draws(tc.p, seeds)
		within3Sigma(t, tc.name, got, tc.factor*e1*seeds, tc.factor*e1*seeds)
	}
	got, _, _ := draws(base, seeds)
	within3Sigma(t, "base", got, e1*seeds, e1*seeds)
}

func TestDrawIsReproducible(t *testing.T) {
	p := storm(1, compressUnit*50)
	a, b := p.Draw(rand.New(rand.NewPCG(3, 7))), p.Draw(rand.New(rand.NewPCG(3, 7)))
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d events", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event %d: %+v, then %+v", i, a[i], b[i])
		}
	}
}

func TestPerDay(t *testing.T) {
	tb := Table{T1: {MTBF: 48 * time.Hour}, HostLink: {MTBF: 1000 * time.Hour}}
	got := tb.PerDay(Inventory{T1: 10, HostLink: 2000, T2: 5})
	if got[T1] != 5 || got[HostLink] != 48 || len(got) != 2 {
		t.Errorf("PerDay = %v, want t1 5, host_link 48", got)
	}
	if a := AFR(MTBFOfAFR(0.05)); math.Abs(a-0.05) > 1e-12 {
		t.Errorf("AFR(MTBFOfAFR(0.05)) = %v", a)
	}
}

func TestDefaultsValid(t *testing.T) {
	d := Defaults()
	for _, c := range Classes {
		r, ok := d[c]
		if !ok {
			t.Errorf("no default for %s", c)
			continue
		}
		if err := r.Validate(c); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Defaults()[T1]
	for _, tc := range []struct {
		c     Class
		edit  func(*Rate)
		field string
	}{
		{T1, func(r *Rate) { r.MTBF = 0 }, "mtbf"},
		{T1, func(r *Rate) { r.MTBF = -time.Hour }, "mtbf"},
		{T1, func(r *Rate) { r.Repair = 0 }, "repair"},
		{T1, func(r *Rate) { r.Mix.Down = -0.1 }, "down"},
		{T1, func(r *Rate) { r.Mix.Down = 0.5 }, "down"}, // sums to 1.3
		{HostLink, func(r *Rate) { r.Mix = Mix{Down: 0.5, Blackhole: 0.5} }, "blackhole"},
		{HostLink, func(r *Rate) { r.Mix = Mix{Down: 0.5, Reboot: 0.5} }, "reboot"},
		{T1, func(r *Rate) { r.Mix = Mix{Flap: 1}; r.Flap.Every = 0 }, "flap_every"},
	} {
		r := good
		tc.edit(&r)
		err := r.Validate(tc.c)
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tc.field {
			t.Errorf("%s %+v: error %v, want one on %s", tc.c, r, err, tc.field)
		}
	}
	if _, err := ParseClass("t9"); err == nil {
		t.Error("ParseClass(t9): no error")
	}
}
