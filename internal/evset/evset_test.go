package evset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/openmrc/mrc/internal/testkit/golden"
	"github.com/openmrc/mrc/internal/xrand"
	"github.com/openmrc/mrc/mtime"
)

// TestTranscript replays testdata/states.txt: the EV state machine of
// digest §3.4 driven by the signals of §3.5, one line per transition.
func TestTranscript(t *testing.T) {
	var s *Set
	var out []string
	r := xrand.New(1)
	at := func(c golden.Cmd) mtime.Time { return mtime.Time(c.Duration(t, "t", 0)) }
	slot := func(c golden.Cmd) Slot {
		n := c.Int(t, "ev", -1)
		if n < 0 || n >= s.Len() {
			t.Fatalf("line %d: bad ev", c.Line)
		}
		return Slot(n)
	}
	golden.Run(t, "testdata/states.txt", func(t *testing.T, c golden.Cmd) string {
		out = out[:0]
		switch c.Verb {
		case "new":
			cfg := Config{
				Planes:         c.Int(t, "planes", 2),
				ActivePerPlane: c.Int(t, "active", 2),
				BackupPerPlane: c.Int(t, "backup", 1),
				MinActive:      c.Int(t, "min", 0),
				Skip:           10 * time.Microsecond,
				ProbeInterval:  100 * time.Microsecond,
				ProbeTimeout:   50 * time.Microsecond,
			}
			per := cfg.ActivePerPlane + cfg.BackupPerPlane
			vals := make([]uint32, cfg.Planes*per)
			for i := range vals {
				vals[i] = uint32(0x100*(i/per) + i%per)
			}
			var err error
			if s, err = New(cfg, vals); err != nil {
				return "error: " + err.Error()
			}
			s.Notify = func(tr Transition) {
				line := fmt.Sprintf("ev %d (%#x, plane %d): %s -> %s (%s)", tr.Slot, tr.EV, tr.Plane, tr.From, tr.To, tr.Reason)
				if tr.Replacement >= 0 {
					line += fmt.Sprintf(", ev %d activated", tr.Replacement)
				}
				out = append(out, line)
			}
		case "ecn":
			s.OnSkip(at(c), slot(c), ReasonECN)
		case "trim":
			s.OnSkip(at(c), slot(c), ReasonTrim)
		case "loss", "always-skip":
			why := ReasonLoss
			if c.Verb == "always-skip" {
				why = ReasonAlwaysSkip
			}
			if !s.OnBad(at(c), slot(c), why) {
				out = append(out, "not retired")
			}
		case "probe":
			mask := uint32(c.Int(t, "mask", 0xff))
			for {
				p, ok := s.NextProbe(at(c), mask)
				if !ok {
					break
				}
				out = append(out, fmt.Sprintf("probe ev %d", p))
			}
		case "probe-ok":
			s.OnProbeResponse(at(c), slot(c), c.Has("ecn"))
		case "expire":
			if failed := s.ExpireProbes(at(c), nil); len(failed) > 0 {
				out = append(out, fmt.Sprintf("doubts failed %v", failed))
			}
		case "follow":
			if !s.Follow(slot(c), Slot(c.Int(t, "lead", -1))) {
				out = append(out, "not following")
			}
		case "suspect":
			s.Suspect(at(c), slot(c))
		case "doubt":
			var slots []Slot
			for _, f := range strings.Split(c.Str("evs", ""), ",") {
				n, err := strconv.Atoi(f)
				if err != nil || n < 0 || n >= s.Len() {
					t.Fatalf("line %d: bad evs", c.Line)
				}
				slots = append(slots, Slot(n))
			}
			out = append(out, fmt.Sprintf("%d doubted", s.Doubt(at(c), slots)))
		case "deny":
			s.Deny(at(c), slot(c))
		case "allow":
			s.Allow(at(c), slot(c))
		case "plane":
			s.SetPlaneUp(c.Int(t, "p", 0), c.Str("up", "true") == "true")
		case "pick":
			// Count how often each EV is picked in n draws.
			n := c.Int(t, "n", 100)
			mask := uint32(c.Int(t, "mask", 0xff))
			counts := map[Slot]int{}
			for range n {
				sl, ok := s.Pick(at(c), mask, r)
				if !ok {
					return "no EV"
				}
				counts[sl]++
			}
			var parts []string
			for i := range s.Len() {
				if counts[Slot(i)] > 0 {
					parts = append(parts, fmt.Sprintf("ev%d", i))
				}
			}
			out = append(out, "picked "+strings.Join(parts, " "))
		case "deadline":
			out = append(out, "next deadline "+s.NextDeadline(at(c)).String())
		case "show":
			now := at(c)
			for p := range s.planes {
				var act, bak []string
				for _, sl := range s.active(p) {
					act = append(act, fmt.Sprintf("%d:%s", sl, s.State(sl, now)))
				}
				for _, sl := range backups(s, p) {
					bak = append(bak, fmt.Sprintf("%d", sl))
				}
				out = append(out, fmt.Sprintf("plane %d up=%v active=[%s] backup=[%s]", p, s.planes[p].up, strings.Join(act, " "), strings.Join(bak, " ")))
			}
			var bad []string
			for _, pr := range s.retired {
				bad = append(bad, fmt.Sprintf("%d", pr.slot))
			}
			out = append(out, "retired=["+strings.Join(bad, " ")+"]")
			if len(s.doubts) > 0 {
				var ds []string
				for _, d := range s.doubts {
					ds = append(ds, fmt.Sprintf("%d(lead %d)", d.slot, d.lead))
				}
				out = append(out, "doubted=["+strings.Join(ds, " ")+"]")
			}
		default:
			t.Fatalf("line %d: unknown verb %q", c.Line, c.Verb)
		}
		return strings.Join(out, "\n")
	})
}

// TestPickSpreadsEvenly checks the spray: with every EV good, each plane gets
// its round-robin share and each active EV a fair share of its plane.
func TestPickSpreadsEvenly(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 3))
		pr := xrand.New(seed)
		planes, active := 1+r.IntN(8), 1+r.IntN(32)
		vals := make([]uint32, planes*active*2)
		for i := range vals {
			vals[i] = uint32(i)
		}
		s, err := New(Config{Planes: planes, ActivePerPlane: active, BackupPerPlane: active}, vals)
		if err != nil {
			t.Fatal(err)
		}
		n := 2000 * planes * active
		counts := make([]int, s.Len())
		perPlane := make([]int, planes)
		for range n {
			sl, ok := s.Pick(0, ^uint32(0), pr)
			if !ok {
				t.Fatal("no EV")
			}
			if !s.Active(sl) {
				t.Fatalf("picked inactive EV %d", sl)
			}
			counts[sl]++
			perPlane[s.Plane(sl)]++
		}
		for p, c := range perPlane {
			if c != n/planes {
				t.Fatalf("seed %d: plane %d got %d of %d picks, want exactly %d (round robin)", seed, p, c, n, n/planes)
			}
		}
		for sl, c := range counts {
			if !s.Active(Slot(sl)) {
				continue
			}
			want := float64(n) / float64(planes*active)
			if float64(c) < 0.85*want || float64(c) > 1.15*want {
				t.Fatalf("seed %d: EV %d picked %d times, want about %.0f", seed, sl, c, want)
			}
		}
	}
}

// TestInvariantsUnderRandomSignals throws random signals at a set and checks
// its bookkeeping after each: every EV is in exactly one place that matches
// its state, planes never exceed ActivePerPlane, and the MinActive floor holds.
func TestInvariantsUnderRandomSignals(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 9))
		pr := xrand.New(seed)
		cfg := Config{Planes: 1 + r.IntN(4), ActivePerPlane: 1 + r.IntN(6), BackupPerPlane: r.IntN(4)}
		cfg = cfg.WithDefaults()
		vals := make([]uint32, cfg.Planes*(cfg.ActivePerPlane+cfg.BackupPerPlane))
		for i := range vals {
			vals[i] = uint32(i) * 7
		}
		s, err := New(cfg, vals)
		if err != nil {
			t.Fatal(err)
		}
		now := mtime.Time(0)
		for step := range 2000 {
			now = now.Add(time.Duration(r.IntN(30)) * time.Microsecond)
			sl := Slot(r.IntN(s.Len()))
			switch r.IntN(14) {
			case 0:
				s.OnSkip(now, sl, ReasonECN)
			case 1, 2:
				s.OnBad(now, sl, ReasonLoss)
			case 3:
				for {
					if _, ok := s.NextProbe(now, ^uint32(0)); !ok {
						break
					}
				}
			case 4, 5:
				s.OnProbeResponse(now, sl, r.IntN(4) == 0)
			case 6:
				for _, d := range s.ExpireProbes(now, nil) {
					if r.IntN(2) == 0 {
						s.OnBad(now, d, ReasonLoss)
					}
					s.Unsuspect(now, d)
				}
			case 7:
				if r.IntN(5) == 0 {
					s.Deny(now, sl)
				} else {
					s.Allow(now, sl)
				}
			case 8:
				if _, ok := s.Pick(now, ^uint32(0), pr); !ok && s.Usable(^uint32(0)) {
					t.Fatalf("seed %d step %d: Pick failed while usable", seed, step)
				}
			case 9:
				if r.IntN(2) == 0 {
					s.Doubt(now, []Slot{sl, Slot(r.IntN(s.Len())), Slot(r.IntN(s.Len()))})
				} else {
					s.Follow(sl, Slot(r.IntN(s.Len())))
				}
			case 10:
				if r.IntN(2) == 0 {
					s.Suspect(now, sl)
				} else {
					s.Unsuspect(now, sl)
				}
			case 11:
				s.ProbeSoon(now, sl)
			case 12:
				s.Defer(now, sl)
			case 13:
				s.SetPlaneUp(r.IntN(cfg.Planes), r.IntN(3) != 0)
			}
			checkInvariants(t, s, now, seed, step)
			for _, mask := range []uint32{^uint32(0), 1, 1 << (cfg.Planes - 1), r.Uint32()} {
				if got, want := s.ProbeDue(now, mask), probeDueScan(s, now, mask); got != want {
					t.Fatalf("seed %d step %d: ProbeDue(%#x) %v, the lists say %v", seed, step, mask, got, want)
				}
			}
		}
	}
}

// probeDueScan is ProbeDue read off both lists, the reference for the
// planes it caches (dueMask).
func probeDueScan(s *Set, now mtime.Time, mask uint32) bool {
	for _, list := range [2][]probe{s.doubts, s.retired} {
		for _, pr := range list {
			p := s.Plane(pr.slot)
			if !pr.awaiting && pr.at <= now && mask&(1<<p) != 0 && s.planes[p].up {
				return true
			}
		}
	}
	return false
}

func checkInvariants(t *testing.T, s *Set, now mtime.Time, seed uint64, step int) {
	t.Helper()
	where := make([]string, s.Len())
	put := func(sl Slot, place string) {
		if where[sl] != "" {
			t.Fatalf("seed %d step %d: EV %d both %s and %s", seed, step, sl, where[sl], place)
		}
		where[sl] = place
	}
	nActive := 0
	for p := range s.planes {
		if len(s.active(p)) > s.cfg.ActivePerPlane {
			t.Fatalf("seed %d step %d: plane %d has %d active", seed, step, p, len(s.active(p)))
		}
		if int(s.planes[p].nActive+s.planes[p].nBackup) > s.per {
			t.Fatalf("seed %d step %d: plane %d's lists overlap", seed, step, p)
		}
		for i, sl := range s.active(p) {
			put(sl, "active")
			if int(s.evs[sl].pos) != i || s.Plane(sl) != p {
				t.Fatalf("seed %d step %d: EV %d position broken", seed, step, sl)
			}
			nActive++
		}
		for _, sl := range backups(s, p) {
			if s.Plane(sl) != p {
				t.Fatalf("seed %d step %d: backup EV %d of plane %d in plane %d", seed, step, sl, s.Plane(sl), p)
			}
			put(sl, "backup")
		}
	}
	for _, pr := range s.retired {
		put(pr.slot, "retired")
	}
	for _, pr := range s.retired {
		if i := s.retiredIndex(pr.lead); i < 0 || s.retired[i].lead != pr.lead || pr.lead != pr.slot && (pr.awaiting || pr.at != mtime.Never) {
			t.Fatalf("seed %d step %d: retired EV %d follows %d, which leads no probes, or is probed itself", seed, step, pr.slot, pr.lead)
		}
	}
	for _, d := range s.doubts {
		if st := s.State(d.slot, now); (where[d.slot] != "active" && where[d.slot] != "backup") || st != Skip {
			t.Fatalf("seed %d step %d: doubted EV %d is %s in %q", seed, step, d.slot, st, where[d.slot])
		}
		if s.doubtIndex(d.lead) < 0 || s.doubts[s.doubtIndex(d.lead)].lead != d.lead {
			t.Fatalf("seed %d step %d: doubted EV %d follows %d, which leads no doubt", seed, step, d.slot, d.lead)
		}
	}
	if nActive != s.nActive {
		t.Fatalf("seed %d step %d: nActive %d, counted %d", seed, step, s.nActive, nActive)
	}
	for i := range s.evs {
		st := s.State(Slot(i), now)
		switch where[i] {
		case "active":
			if st != Good && st != Skip {
				t.Fatalf("seed %d step %d: active EV %d is %s", seed, step, i, st)
			}
		case "backup":
			if st != Good && st != Skip {
				t.Fatalf("seed %d step %d: backup EV %d is %s", seed, step, i, st)
			}
		case "retired":
			if st != AssumedBad {
				t.Fatalf("seed %d step %d: retired EV %d is %s", seed, step, i, st)
			}
		case "":
			if st != Denied {
				t.Fatalf("seed %d step %d: EV %d is nowhere but %s", seed, step, i, st)
			}
		}
	}
}

// TestSuspectRestsUntilCleared: a suspect EV rests with no end, through
// an ECN rest that would otherwise end it, is never picked while another
// EV is Good, and is Good again at Unsuspect; OnBad retires it from there.
func TestSuspectRestsUntilCleared(t *testing.T) {
	s, err := New(Config{Planes: 1, ActivePerPlane: 2, Skip: 10}, []uint32{10, 11})
	if err != nil {
		t.Fatal(err)
	}
	pr := xrand.New(1)
	if !s.Suspect(0, 0) {
		t.Fatal("a Good EV could not become a suspect")
	}
	s.OnSkip(5, 0, ReasonECN)
	for now := mtime.Time(0); now < 1000; now += 7 {
		if sl, _ := s.Pick(now, 1, pr); sl == 0 {
			t.Fatalf("suspect picked at %d", now)
		}
		if st := s.State(0, now); st != Skip {
			t.Fatalf("suspect in %v at %d, want SKIP", st, now)
		}
	}
	s.Unsuspect(1000, 0)
	if st := s.State(0, 1000); st != Good {
		t.Fatalf("after Unsuspect: %v, want GOOD", st)
	}
	if !s.Suspect(1001, 0) || !s.OnBad(1002, 0, ReasonLoss) || s.State(0, 1002) != AssumedBad {
		t.Fatal("a suspect could not be retired")
	}
	if s.Suspect(1003, 0) {
		t.Fatal("a retired EV became a suspect")
	}
}

// backups returns plane p's backup stack, bottom first.
func backups(s *Set, p int) []Slot {
	out := make([]Slot, s.planes[p].nBackup)
	for i := range out {
		out[i] = s.backup(p, i)
	}
	return out
}

// TestBackupOrder: the backup stack keeps its order when an EV leaves
// from its middle (retired or denied), and promotes from its top.
func TestBackupOrder(t *testing.T) {
	s, err := New(Config{Planes: 2, ActivePerPlane: 1, BackupPerPlane: 5, MinActive: 1}, []uint32{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15})
	if err != nil {
		t.Fatal(err)
	}
	check := func(p int, want ...Slot) {
		t.Helper()
		if got := backups(s, p); !slices.Equal(got, want) {
			t.Fatalf("plane %d backups %v, want %v", p, got, want)
		}
	}
	check(0, 1, 2, 3, 4, 5)
	check(1, 7, 8, 9, 10, 11)
	if !s.OnBad(0, 3, ReasonLoss) || !s.Deny(0, 8) {
		t.Fatal("a backup EV did not leave")
	}
	check(0, 1, 2, 4, 5)
	check(1, 7, 9, 10, 11)
	if !s.OnBad(0, 0, ReasonLoss) {
		t.Fatal("the active EV was not retired")
	}
	if got := s.active(0); !slices.Equal(got, []Slot{5}) {
		t.Fatalf("plane 0 active %v after a retirement, want the top backup [5]", got)
	}
	check(0, 1, 2, 4)
	s.Allow(0, 8)
	check(1, 7, 9, 10, 11, 8)
	check(0, 1, 2, 4)
}

// TestEntrySize guards the table's footprint: a large simulation holds
// hundreds of thousands of QPs with 256 EVs each.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 6 {
		t.Fatalf("an EV entry takes %d bytes, want 6", n)
	}
}

// TestValuesKept: Value returns every value New was given, whether the
// values number their slots in their top 16 bits (the core's EVs, whose
// top halves the set then does not store) or not.
func TestValuesKept(t *testing.T) {
	cfg := Config{Planes: 2, ActivePerPlane: 3, BackupPerPlane: 2}
	numbered := make([]uint32, 10)
	for i := range numbered {
		numbered[i] = (0xC000+uint32(i))<<16 | uint32(i*7+1)
	}
	arbitrary := []uint32{5, 0xdeadbeef, 77, 1 << 31, 3, 0xffff0000, 12, 13, 0x12345678, 99}
	for _, tc := range []struct {
		values []uint32
		stored bool // the top halves are stored
	}{{numbered, false}, {arbitrary, true}} {
		s, err := New(cfg, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range tc.values {
			if got := s.Value(Slot(i)); got != v {
				t.Errorf("slot %d: value %#x, want %#x", i, got, v)
			}
		}
		if stored := s.hi != nil; stored != tc.stored {
			t.Errorf("values %#x: top halves stored %v, want %v", tc.values[:2], stored, tc.stored)
		}
	}
}

// TestRestsAcrossSeconds: rest ends are kept in 32-bit nanoseconds from a
// base that moves up when an end no longer fits; a rest begun before the
// move ends when it did, a suspect's rest still has no end, and a rest
// after a long quiet spell ends Skip later.
func TestRestsAcrossSeconds(t *testing.T) {
	const skip = 100 * time.Microsecond
	s, err := New(Config{Planes: 1, ActivePerPlane: 4, MinActive: 1, Skip: skip}, []uint32{10, 11, 12, 13})
	if err != nil {
		t.Fatal(err)
	}
	t0 := mtime.Time(1<<32 - 150_000) // the first base is 0: ends below 2^32 fit
	s.Suspect(0, 1)
	s.OnSkip(t0, 0, ReasonECN)              // ends at t0+skip, below 2^32
	s.OnSkip(t0.Add(skip/2), 2, ReasonTrim) // ends beyond 2^32: the base moves
	later := t0.Add(time.Hour)
	for _, c := range []struct {
		slot Slot
		at   mtime.Time
		want State
	}{ // in time order, as a QP asks
		{0, t0.Add(skip - 1), Skip},
		{0, t0.Add(skip), Good},
		{2, t0.Add(skip*3/2 - 1), Skip},
		{2, t0.Add(skip * 3 / 2), Good},
		{1, later, Skip},
	} {
		if got := s.State(c.slot, c.at); got != c.want {
			t.Errorf("EV %d at %v: %v, want %v", c.slot, c.at, got, c.want)
		}
	}
	s.OnSkip(later, 3, ReasonECN) // the base moves again
	if s.State(3, later.Add(skip-1)) != Skip || s.State(3, later.Add(skip)) != Good || s.State(1, later.Add(skip)) != Skip {
		t.Error("a rest after the base moved again does not end Skip later, or the suspect's ended")
	}
}
