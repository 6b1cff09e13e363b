package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/units"
	"github.com/openmrc/mrc/wire"
)

// KindSet is a set of Kinds.
type KindSet uint32

// Add returns s with k added.
func (s KindSet) Add(k Kind) KindSet { return s | 1<<k }

// Has reports whether k is in s.
func (s KindSet) Has(k Kind) bool { return k < 32 && s&(1<<k) != 0 }

// Kinds returns the set of the given kinds.
func Kinds(ks ...Kind) KindSet {
	var s KindSet
	for _, k := range ks {
		s = s.Add(k)
	}
	return s
}

// Filter selects records, so that a large run's trace stays manageable.
// Every condition set must hold; the zero Filter keeps everything.
type Filter struct {
	// Kinds keeps only records of these kinds (empty: every kind).
	Kinds KindSet
	// QPNs keeps only records of these QPs.
	QPNs []uint32
	// From and To keep records with From <= Time < To. A zero To means
	// no upper bound.
	From, To mtime.Time
	// EVs keeps only records about these EVs: packet records sent on,
	// acknowledged for or NACKed for them, and their state changes.
	// Records without an EV (window and QP state changes) are dropped.
	EVs []wire.EV
	// Planes keeps only records about these planes, like EVs.
	Planes []int
	// Sample, when above 1, keeps about one packet in Sample: every
	// record of a kept packet (sent, acked, NACKed, ...) and none of a
	// dropped one, chosen by a hash of its QP and PSN, so a packet's
	// whole story stays together. Window changes are sampled one in
	// Sample by time; EV and QP state changes are always kept.
	Sample int
}

// hasEV reports whether records of kind k carry an EV and a plane.
func hasEV(k Kind) bool { return k.Fields()&(FieldsPacket|FieldsEV) != 0 }

// isPacket reports whether records of kind k are about one packet (PSN).
func isPacket(k Kind) bool { return k.Fields()&FieldsPacket != 0 }

// Match reports whether f keeps r. It does not allocate.
func (f *Filter) Match(r *Record) bool {
	if f.Kinds != 0 && !f.Kinds.Has(r.Kind) {
		return false
	}
	if r.Time < f.From || f.To != 0 && r.Time >= f.To {
		return false
	}
	if len(f.QPNs) > 0 && !slices.Contains(f.QPNs, r.QPN) {
		return false
	}
	if len(f.EVs) > 0 && (!hasEV(r.Kind) || !slices.Contains(f.EVs, r.EV)) {
		return false
	}
	if len(f.Planes) > 0 && (!hasEV(r.Kind) || !slices.Contains(f.Planes, r.Plane)) {
		return false
	}
	if f.Sample > 1 {
		switch {
		case isPacket(r.Kind):
			return mix(uint64(r.QPN)<<32|uint64(r.PSN))%uint64(f.Sample) == 0
		case r.Kind == CwndChanged:
			return mix(uint64(r.QPN)<<40^uint64(r.Time))%uint64(f.Sample) == 0
		}
	}
	return true
}

// mix is the splitmix64 finalizer: a cheap, well-spread hash.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Tracer returns a Tracer that passes the records f keeps to next.
func (f Filter) Tracer(next Tracer) Tracer {
	return Func(func(r *Record) {
		if f.Match(r) {
			next.Trace(r)
		}
	})
}

// Multi returns a Tracer that passes every record to each of ts in turn.
func Multi(ts ...Tracer) Tracer {
	ts = slices.Clone(ts)
	return Func(func(r *Record) {
		for _, t := range ts {
			t.Trace(r)
		}
	})
}

// ParseFilter parses a filter written as space-separated clauses, each
// key=value with comma-separated values (docs/trace.md):
//
//	kind=sent,nacked    kinds, as Kind.String prints them
//	qpn=256,0x101       QP numbers
//	t=10us..2ms         time window [from, to); either end may be left out
//	ev=0xc008102f       EVs
//	plane=0,1           planes
//	sample=100          keep one packet in 100
//
// The empty string is the zero Filter.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, clause := range strings.Fields(s) {
		key, val, ok := strings.Cut(clause, "=")
		if !ok || val == "" {
			return Filter{}, fmt.Errorf("trace filter: %q: want key=value", clause)
		}
		vals := strings.Split(val, ",")
		switch key {
		case "kind":
			for _, v := range vals {
				k, ok := ParseKind(v)
				if !ok {
					return Filter{}, fmt.Errorf("trace filter: unknown kind %q (kinds: %s)", v, strings.Join(kindNames[1:], ", "))
				}
				f.Kinds = f.Kinds.Add(k)
			}
		case "qpn", "ev":
			for _, v := range vals {
				n, err := strconv.ParseUint(v, 0, 32)
				if err != nil || key == "qpn" && n >= 1<<24 {
					return Filter{}, fmt.Errorf("trace filter: %s %q: not a number", key, v)
				}
				if key == "qpn" {
					f.QPNs = append(f.QPNs, uint32(n))
				} else {
					f.EVs = append(f.EVs, wire.EV(n))
				}
			}
		case "plane":
			for _, v := range vals {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return Filter{}, fmt.Errorf("trace filter: plane %q: not a plane number", v)
				}
				f.Planes = append(f.Planes, n)
			}
		case "t":
			from, to, ok := strings.Cut(val, "..")
			if !ok {
				return Filter{}, fmt.Errorf("trace filter: t=%s: want FROM..TO, e.g. t=10us..2ms", val)
			}
			var err error
			if f.From, err = parseTime(from); err != nil {
				return Filter{}, err
			}
			if f.To, err = parseTime(to); err != nil {
				return Filter{}, err
			}
			if f.To != 0 && f.To <= f.From {
				return Filter{}, fmt.Errorf("trace filter: t=%s: empty window", val)
			}
		case "sample":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return Filter{}, fmt.Errorf("trace filter: sample=%s: want a whole number of at least 1", val)
			}
			f.Sample = n
		default:
			return Filter{}, fmt.Errorf("trace filter: unknown key %q (keys: kind, qpn, t, ev, plane, sample)", key)
		}
	}
	return f, nil
}

func parseTime(s string) (mtime.Time, error) {
	if s == "" {
		return 0, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("trace filter: time %q: want a duration such as 150us", s)
	}
	return mtime.Time(d), nil
}
