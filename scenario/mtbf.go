package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/openmrc/mrc/faults"
	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/topo"
)

// kindMTBF is the failure kind that draws failures from the fabric's parts
// (package faults) instead of listing them.
const kindMTBF = "mtbf"

// defaultStop is sim.Config's default StopAt, the window of an mtbf
// process when neither it nor the scenario says.
const defaultStop = time.Second

// ClassSpec overrides one component class's failure model
// (faults.Rate). Zero fields keep the default; giving any of down, flap,
// blackhole and reboot replaces the whole mix (the others are 0).
type ClassSpec struct {
	MTBF      *Duration `yaml:"mtbf"`
	AFR       float64   `yaml:"afr"` // failures per component per year, instead of mtbf
	Repair    *Duration `yaml:"repair"`
	Down      *float64  `yaml:"down"`
	Flap      *float64  `yaml:"flap"`
	Blackhole *float64  `yaml:"blackhole"`
	Reboot    *float64  `yaml:"reboot"`
	FlapFor   Duration  `yaml:"flap_for"`
	FlapEvery Duration  `yaml:"flap_every"`
	FlapDown  Duration  `yaml:"flap_down"`
}

// fabricParts lists a topology's components by class, in the order the
// fault process numbers them, as element names topo.Find reads.
func fabricParts(tp *topo.Topology) map[faults.Class][]string {
	parts := map[faults.Class][]string{}
	for _, l := range tp.HostLink {
		k := &tp.Links[l]
		name := fmt.Sprintf("%s/p%d", tp.Name(k.A), k.APort)
		parts[faults.NICPort] = append(parts[faults.NICPort], name)
		parts[faults.HostLink] = append(parts[faults.HostLink], name)
	}
	tier := func(n topo.NodeID) int {
		if tp.IsHost(n) {
			return -1
		}
		return tp.SwitchOf(n).Tier
	}
	for l, k := range tp.Links {
		switch lo, hi := min(tier(k.A), tier(k.B)), max(tier(k.A), tier(k.B)); {
		case lo == 0 && hi == 1:
			parts[faults.T0T1] = append(parts[faults.T0T1], tp.LinkName(l))
		case lo == 1 && hi == 2:
			parts[faults.T1T2] = append(parts[faults.T1T2], tp.LinkName(l))
		}
	}
	for i, s := range tp.Switches {
		c := []faults.Class{faults.T0, faults.T1, faults.T2}[min(s.Tier, 2)]
		parts[c] = append(parts[c], tp.Name(tp.Node(i)))
	}
	return parts
}

// mtbfTable returns the default table with failure f's class overrides.
func (s *Scenario) mtbfTable(key string, f Failure) (faults.Table, error) {
	t := faults.Defaults()
	names := make([]string, 0, len(f.Classes))
	for name := range f.Classes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ck := key + ".classes." + name
		c, err := faults.ParseClass(name)
		if err != nil {
			return nil, s.errorf(ck, "%v", err)
		}
		o, r := f.Classes[name], t[c]
		switch {
		case o.MTBF != nil && o.AFR != 0:
			return nil, s.errorf(ck, "give mtbf or afr, not both")
		case o.MTBF != nil:
			r.MTBF = o.MTBF.D()
		case o.AFR < 0:
			return nil, s.errorf(ck+".afr", "%v: want a positive number of failures per year", o.AFR)
		case o.AFR > 0:
			r.MTBF = faults.MTBFOfAFR(o.AFR)
		}
		if o.Repair != nil {
			r.Repair = o.Repair.D()
		}
		if o.Down != nil || o.Flap != nil || o.Blackhole != nil || o.Reboot != nil {
			val := func(p *float64) float64 {
				if p == nil {
					return 0
				}
				return *p
			}
			r.Mix = faults.Mix{Down: val(o.Down), Flap: val(o.Flap), Blackhole: val(o.Blackhole), Reboot: val(o.Reboot)}
		}
		for _, d := range []struct {
			v   Duration
			dst *time.Duration
		}{{o.FlapFor, &r.Flap.For}, {o.FlapEvery, &r.Flap.Every}, {o.FlapDown, &r.Flap.Down}} {
			if d.v != 0 {
				*d.dst = d.v.D()
			}
		}
		if err := r.Validate(c); err != nil {
			fe := err.(*faults.FieldError)
			return nil, s.errorf(ck+"."+fe.Field, "%s", fe.Msg)
		}
		t[c] = r
	}
	return t, nil
}

// expandMTBF draws failure f (kind mtbf, at index i) from the fabric's
// parts over its window and returns the simulator's failures and a
// description with notes for the report.
func (s *Scenario) expandMTBF(i int, f Failure, tp *topo.Topology, seed uint64, stop time.Duration) ([]sim.Failure, []string, error) {
	key := fmt.Sprintf("failures[%d]", i)
	switch {
	case f.Element != "" || f.Count != 0:
		return nil, nil, s.errorf(key, "an mtbf process picks its own elements: no element or count")
	case f.Loss != 0 || f.FlapRate != 0 || f.DownFor != 0:
		return nil, nil, s.errorf(key, "loss, flap_rate and down_for are not for kind mtbf (set flap_every and flap_down per class)")
	case f.Compress != nil && *f.Compress <= 0:
		return nil, nil, s.errorf(key+".compress", "%v: want a factor above 0 (1: real time)", *f.Compress)
	}
	until := f.Until.D()
	if until == 0 {
		until = stop
	}
	if until <= f.At.D() {
		return nil, nil, s.errorf(key+".until", "the window ends (%v) before it starts (at %v)", until, f.At.D())
	}
	table, err := s.mtbfTable(key, f)
	if err != nil {
		return nil, nil, err
	}
	parts := fabricParts(tp)
	inv := faults.Inventory{}
	for c, names := range parts {
		inv[c] = len(names)
	}
	compress := 1.0
	if f.Compress != nil {
		compress = *f.Compress
	}
	p := faults.Process{Table: table, Inventory: inv, From: f.At.D(), To: until, Compress: compress}
	events := p.Draw(rand.New(rand.NewPCG(seed, 0x6d746266+uint64(i))))

	var out []sim.Failure
	busy := map[string]time.Duration{} // element → failed until
	byKind := map[string]int{}
	dropped := 0
	for _, e := range events {
		el := parts[e.Class][e.Index]
		if busy[el] > e.At {
			dropped++ // still failed: it cannot fail again
			continue
		}
		busy[el] = e.Until
		end := e.Until
		if end >= stop {
			end = 0 // not back within the run
		}
		sf := sim.Failure{Element: el, At: e.At, Until: end}
		switch {
		case e.Kind == faults.Flap:
			r := table[e.Class]
			sf.Kind, sf.Until = sim.LinkFlap, e.Until
			sf.FlapRate, sf.DownFor = float64(time.Second)/float64(r.Flap.Every), r.Flap.Down
		case e.Kind == faults.Blackhole:
			sf.Kind = sim.SwitchBlackhole
		case e.Kind == faults.Reboot && end != 0:
			sf.Kind = sim.SwitchReboot
		case e.Class.IsSwitch():
			sf.Kind = sim.SwitchDown // a down, or a reboot not back within the run
		case e.Class == faults.NICPort:
			sf.Kind = sim.NICPortDown
		default:
			sf.Kind = sim.LinkDown
		}
		out = append(out, sf)
		byKind[string(e.Class)+" "+string(e.Kind)]++
	}

	window := until - f.At.D()
	desc := fmt.Sprintf("mtbf process, compressed ×%.4g: %s of simulated time (%s to %s) replays %s of operation; %d failures drawn",
		compress, report.Dur(window), report.Dur(f.At.D()), report.Dur(until), opDuration(time.Duration(float64(window)*compress)), len(out))
	if len(byKind) > 0 {
		var ks []string
		for k := range byKind {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for j, k := range ks {
			ks[j] = fmt.Sprintf("%d %s", byKind[k], k)
		}
		desc += " (" + strings.Join(ks, ", ") + ")"
	}
	descs := []string{desc}
	if dropped > 0 {
		descs = append(descs, fmt.Sprintf("note: %d drawn failures fell on an element still failed and were dropped", dropped))
	}
	for _, c := range faults.Classes {
		if r := table[c]; inv[c] > 0 && r.Repair > stop && (r.Mix.Down+r.Mix.Blackhole+r.Mix.Reboot) > 0 {
			descs = append(descs, fmt.Sprintf("note: %s repair time %s is longer than the run (%s): its failures last to the end", c, opDuration(r.Repair), report.Dur(stop)))
		}
	}
	return out, descs, nil
}

// opDuration writes a stretch of real operation in the largest fitting
// unit: "72 s", "1.0 h", "3.2 days".
func opDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return report.Dur(d)
}
