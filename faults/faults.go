// Package faults is the one table of component failure rates that the
// planner (mrc plan: expected failures per day) and the scenario builder
// (failure kind mtbf: a drawn fault process) both read, and the process
// that draws failures from it.
//
// A fabric is a parts list: so many NIC ports, host links, T0–T1 and
// T1–T2 links, and T0, T1 and T2 switches. Each class has a mean time
// between failures (MTBF) per component, a repair time, and the share of
// its failures of each kind. Failures of one component arrive as a
// Poisson process of rate 1/MTBF, so a class of n components fails at
// n/MTBF, and doubling the fabric doubles the failures.
//
// Everything here is pure: no clock, no I/O; randomness is passed in.
// The defaults and their sources are in docs/failures.md.
package faults

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Class names a kind of component.
type Class string

// The component classes, from the NIC up.
const (
	NICPort  Class = "nic_port"  // the NIC port itself: its SerDes, MAC and firmware
	HostLink Class = "host_link" // the NIC–T0 cable and its two transceivers
	T0T1     Class = "t0_t1"     // a T0–T1 cable and its two transceivers
	T1T2     Class = "t1_t2"     // a T1–T2 cable and its two transceivers
	T0       Class = "t0"        // a T0 switch
	T1       Class = "t1"        // a T1 switch
	T2       Class = "t2"        // a T2 switch
)

// Classes lists every class in a fixed order, from the NIC up.
var Classes = []Class{NICPort, HostLink, T0T1, T1T2, T0, T1, T2}

// IsSwitch reports whether c is a switch class (which can blackhole and
// reboot) rather than a port or link class.
func (c Class) IsSwitch() bool { return c == T0 || c == T1 || c == T2 }

// Kind is what one failure does.
type Kind string

// The failure kinds. Links go down or flap; switches also fail silently
// (a blackhole) or reboot. Down, blackhole and reboot last the class's
// repair time.
const (
	Down      Kind = "down"      // the link, or the switch and all its links, fail
	Flap      Kind = "flap"      // a flap train: a laser gone marginal, down/up bursts
	Blackhole Kind = "blackhole" // a switch's dataplane drops everything; links and routes stay up
	Reboot    Kind = "reboot"    // a switch goes down, and comes back after the repair time
)

// Mix is the share of a class's failures of each kind. The shares are
// in [0, 1] and sum to 1; Blackhole and Reboot are for switch classes only.
type Mix struct {
	Down      float64 `json:"down"`
	Flap      float64 `json:"flap"`
	Blackhole float64 `json:"blackhole"`
	Reboot    float64 `json:"reboot"`
}

// FlapTrain shapes a flap train in simulated time: it lasts For, and the
// link drops at random (Poisson) Every on average, each time for Down.
// The shape is not compressed (see Process.Compress).
type FlapTrain struct {
	For   time.Duration `json:"for_ns"`
	Every time.Duration `json:"every_ns"`
	Down  time.Duration `json:"down_ns"`
}

// Rate is one class's failure model.
type Rate struct {
	// MTBF is the mean time between failures of one component, of any
	// kind. Positive.
	MTBF time.Duration `json:"mtbf_ns"`
	// Repair is how long a down, blackhole or reboot lasts. Positive.
	Repair time.Duration `json:"repair_ns"`
	Mix    Mix           `json:"mix"`
	Flap   FlapTrain     `json:"flap_train"`
}

// AFR returns the annualised failure rate, failures per component per
// year (365 days), of an MTBF.
func AFR(mtbf time.Duration) float64 { return float64(year) / float64(mtbf) }

// MTBFOfAFR returns the MTBF of an annualised failure rate afr > 0.
func MTBFOfAFR(afr float64) time.Duration { return time.Duration(float64(year) / afr) }

const (
	day  = 24 * time.Hour
	year = 365 * day
)

// Table holds the rate of every class.
type Table map[Class]Rate

// Defaults returns the default table. Each figure is named in
// docs/failures.md with its source or marked there as an assumption.
func Defaults() Table {
	// Links: a hard failure every 1.8M hours per link matches Llama 3's
	// 35 switch/cable interruptions in 54 days on 16,384 GPUs, spread
	// over an assumed 3 links per GPU; flap trains are assumed 4 times
	// as frequent as hard failures (so MTBF 360,000 h, 20% down).
	link := Rate{MTBF: 360_000 * time.Hour, Repair: 4 * time.Hour, Mix: Mix{Down: 0.2, Flap: 0.8},
		Flap: FlapTrain{For: 100 * time.Microsecond, Every: 20 * time.Microsecond, Down: 5 * time.Microsecond}}
	nic := link
	nic.MTBF = 1_000_000 * time.Hour // assumption
	nic.Mix = Mix{Down: 0.5, Flap: 0.5}
	// Switches: annual failure rates of ToRs (5%) and aggregation
	// switches (10%) from Gill et al., SIGCOMM 2011; the kind mix and the
	// repair time are assumptions.
	sw := func(afr float64) Rate {
		return Rate{MTBF: MTBFOfAFR(afr), Repair: 10 * time.Minute, Mix: Mix{Down: 0.2, Blackhole: 0.2, Reboot: 0.6}, Flap: link.Flap}
	}
	return Table{NICPort: nic, HostLink: link, T0T1: link, T1T2: link, T0: sw(0.05), T1: sw(0.10), T2: sw(0.10)}
}

// Clone returns a copy of t that can be changed without changing t.
func (t Table) Clone() Table {
	out := make(Table, len(t))
	for c, r := range t {
		out[c] = r
	}
	return out
}

// ParseClass returns the class named s, or an error listing the classes.
func ParseClass(s string) (Class, error) {
	if c := Class(s); slices.Contains(Classes, c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown class %q (want %s)", s, classList())
}

func classList() string {
	names := make([]string, len(Classes))
	for i, c := range Classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Validate checks one class's rate. The error names the field at fault
// by its scenario key (mtbf, repair, down, flap, blackhole, reboot,
// flap_for, flap_every, flap_down).
func (r Rate) Validate(c Class) error {
	switch {
	case r.MTBF <= 0:
		return &FieldError{"mtbf", fmt.Sprintf("%v: want a positive time between failures", r.MTBF)}
	case r.Repair <= 0:
		return &FieldError{"repair", fmt.Sprintf("%v: want a positive repair time", r.Repair)}
	}
	m := r.Mix
	for _, s := range []struct {
		key string
		v   float64
	}{{"down", m.Down}, {"flap", m.Flap}, {"blackhole", m.Blackhole}, {"reboot", m.Reboot}} {
		if s.v < 0 || s.v > 1 || math.IsNaN(s.v) {
			return &FieldError{s.key, fmt.Sprintf("%v: want a share in [0, 1]", s.v)}
		}
	}
	if !c.IsSwitch() && (m.Blackhole != 0 || m.Reboot != 0) {
		key := "blackhole"
		if m.Blackhole == 0 {
			key = "reboot"
		}
		return &FieldError{key, fmt.Sprintf("only switches blackhole or reboot; %s is a link class", c)}
	}
	if sum := m.Down + m.Flap + m.Blackhole + m.Reboot; math.Abs(sum-1) > 1e-9 {
		return &FieldError{"down", fmt.Sprintf("the shares down+flap+blackhole+reboot sum to %v, want 1", sum)}
	}
	if m.Flap > 0 {
		switch {
		case r.Flap.For <= 0:
			return &FieldError{"flap_for", "want a positive flap train length"}
		case r.Flap.Every <= 0:
			return &FieldError{"flap_every", "want a positive mean time between flaps"}
		case r.Flap.Down <= 0:
			return &FieldError{"flap_down", "want a positive time down per flap"}
		}
	}
	return nil
}

// FieldError is a bad value in one class's rate; Field is its scenario key.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Inventory counts the components of each class in a fabric.
type Inventory map[Class]int

// Total returns the number of components.
func (inv Inventory) Total() int {
	n := 0
	for _, v := range inv {
		n += v
	}
	return n
}

// PerDay returns the expected failures per day of each class present in
// inv: n · 24 h / MTBF.
func (t Table) PerDay(inv Inventory) map[Class]float64 {
	out := map[Class]float64{}
	for c, n := range inv {
		if r, ok := t[c]; ok && n > 0 {
			out[c] = float64(n) * float64(day) / float64(r.MTBF)
		}
	}
	return out
}

// Process draws failures from a table over a fabric's inventory.
type Process struct {
	Table     Table
	Inventory Inventory
	// From and To bound the window in simulated time.
	From, To time.Duration
	// Compress speeds up time for the arrivals: the window of length
	// To−From sees the failures of Compress times as much operation
	// (3.6e6 replays one hour in a millisecond). Durations (repair
	// times, flap trains) are taken as given, in simulated time.
	Compress float64
}

// Event is one drawn failure: component Index (0-based within its class)
// of Class fails with Kind at At, until Until.
type Event struct {
	Class Class
	Index int
	Kind  Kind
	At    time.Duration
	Until time.Duration
}

// Expected returns the expected number of failures of class c in the
// window.
func (p Process) Expected(c Class) float64 {
	r, ok := p.Table[c]
	if !ok || p.Inventory[c] <= 0 {
		return 0
	}
	return float64(p.Inventory[c]) * p.Compress * float64(p.To-p.From) / float64(r.MTBF)
}

// Draw returns the failures of the window in time order (classes in
// Classes order at equal times). The process of each class is Poisson of
// rate n·Compress/MTBF; each arrival picks a component uniformly and a
// kind by the class's mix. The table must be valid (Rate.Validate) and
// Compress positive. Draw does not stop a component failing again while
// it is failed: a host drops such repeats (see package scenario).
func (p Process) Draw(rng *rand.Rand) []Event {
	var out []Event
	for _, c := range Classes {
		n := p.Inventory[c]
		r, ok := p.Table[c]
		if !ok || n <= 0 {
			continue
		}
		mean := float64(r.MTBF) / (float64(n) * p.Compress) // ns between arrivals
		for t := float64(p.From); ; {
			t += rng.ExpFloat64() * mean
			if t >= float64(p.To) {
				break
			}
			at := time.Duration(t)
			k := pickKind(r.Mix, rng.Float64())
			d := r.Repair
			if k == Flap {
				d = r.Flap.For
			}
			out = append(out, Event{Class: c, Index: rng.IntN(n), Kind: k, At: at, Until: at + d})
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return cmpDur(a.At, b.At) })
	return out
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pickKind(m Mix, u float64) Kind {
	for _, s := range []struct {
		k Kind
		p float64
	}{{Down, m.Down}, {Flap, m.Flap}, {Blackhole, m.Blackhole}} {
		if u < s.p {
			return s.k
		}
		u -= s.p
	}
	if m.Reboot > 0 {
		return Reboot
	}
	// Rounding left u just above the sum: the last kind with a share.
	for _, s := range []struct {
		k Kind
		p float64
	}{{Blackhole, m.Blackhole}, {Flap, m.Flap}, {Down, m.Down}} {
		if s.p > 0 {
			return s.k
		}
	}
	return Down
}
