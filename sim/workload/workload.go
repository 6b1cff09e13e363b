// Package workload describes what the simulated hosts send: flows with
// start times or triggers, and the generators for the usual patterns
// (permutation, incast with a victim, all-to-all, chunked ring
// all-reduce). A Workload is plain data; htsim connection matrices
// (package sim/htsim) load into the same type.
package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/openmrc/mrc/mtime"
)

// Flow is one transfer of Size bytes from host Src to host Dst.
type Flow struct {
	// ID names the flow in results (htsim's "id"; default its index+1).
	ID       int
	Src, Dst int
	Size     uint64
	// Start is when the flow starts, unless Trigger is set: then it
	// starts when that trigger fires.
	Start   mtime.Picos
	Trigger int
	// SendDoneTrigger fires when every byte has been acknowledged to the
	// sender; RecvDoneTrigger when the receiver has every byte. 0: none.
	SendDoneTrigger int
	RecvDoneTrigger int
	// Tag labels flows for results (e.g. "victim").
	Tag string
	// Conn, when not 0, names the connection (QP pair) the flow runs
	// on: flows with the same Conn share one, opened once when the run
	// is set up, and must have the same Src and Dst. 0: the flow has a
	// connection of its own.
	Conn int
}

// TriggerKind says when a trigger fires.
type TriggerKind uint8

const (
	// Oneshot fires the first time a flow activates it.
	Oneshot TriggerKind = iota
	// Multishot fires every time a flow activates it.
	Multishot
	// Barrier fires once Count activations have happened.
	Barrier
	// AtStart fires once, at the start of the run (after its Delay).
	AtStart
)

func (k TriggerKind) String() string {
	switch k {
	case Oneshot:
		return "oneshot"
	case Multishot:
		return "multishot"
	case Barrier:
		return "barrier"
	case AtStart:
		return "at_start"
	}
	return fmt.Sprintf("TriggerKind(%d)", uint8(k))
}

// Trigger starts the flows whose Trigger is its ID, and activates the
// triggers in Activates, when it fires: Delay after its condition is met
// (a compute phase between communications; 0: at once).
type Trigger struct {
	ID        int
	Kind      TriggerKind
	Count     int // Barrier: activations needed
	Delay     mtime.Picos
	Activates []int
}

// Workload is a set of flows and the triggers that chain them.
type Workload struct {
	Name     string
	Flows    []Flow
	Triggers []Trigger
}

// Validate checks the workload against a fabric of hosts hosts.
func (w *Workload) Validate(hosts int) error {
	ids := map[int]bool{}
	for i, t := range w.Triggers {
		switch {
		case t.ID <= 0:
			return fmt.Errorf("workload: trigger %d: id %d, want > 0", i, t.ID)
		case ids[t.ID]:
			return fmt.Errorf("workload: trigger id %d defined twice", t.ID)
		case t.Kind > AtStart:
			return fmt.Errorf("workload: trigger %d: kind %v", t.ID, t.Kind)
		case t.Kind == Barrier && t.Count < 1:
			return fmt.Errorf("workload: barrier trigger %d: count %d, want >= 1", t.ID, t.Count)
		case t.Delay < 0:
			return fmt.Errorf("workload: trigger %d: negative delay", t.ID)
		}
		ids[t.ID] = true
	}
	for _, t := range w.Triggers {
		for _, a := range t.Activates {
			if !ids[a] {
				return fmt.Errorf("workload: trigger %d activates trigger %d, which is not defined", t.ID, a)
			}
		}
	}
	conns := map[int][2]int{}
	for i, f := range w.Flows {
		switch {
		case f.Src < 0 || f.Src >= hosts || f.Dst < 0 || f.Dst >= hosts:
			return fmt.Errorf("workload: flow %d (%d->%d): hosts are 0..%d", f.ID, f.Src, f.Dst, hosts-1)
		case f.Src == f.Dst:
			return fmt.Errorf("workload: flow %d: source and destination are both host %d", f.ID, f.Src)
		case f.Size == 0:
			return fmt.Errorf("workload: flow %d: size 0", f.ID)
		case f.Start < 0:
			return fmt.Errorf("workload: flow %d: negative start", f.ID)
		}
		if f.Conn != 0 {
			ends, seen := conns[f.Conn]
			if seen && ends != [2]int{f.Src, f.Dst} {
				return fmt.Errorf("workload: flow %d (%d->%d) shares connection %d with flows %d->%d", f.ID, f.Src, f.Dst, f.Conn, ends[0], ends[1])
			}
			conns[f.Conn] = [2]int{f.Src, f.Dst}
		}
		for _, tr := range []int{f.Trigger, f.SendDoneTrigger, f.RecvDoneTrigger} {
			if tr != 0 && !ids[tr] {
				return fmt.Errorf("workload: flow %d (index %d) names trigger %d, which is not defined", f.ID, i, tr)
			}
		}
	}
	return nil
}

// Bytes returns the total bytes of all flows.
func (w *Workload) Bytes() uint64 {
	var n uint64
	for _, f := range w.Flows {
		n += f.Size
	}
	return n
}

func (w *Workload) number() {
	for i := range w.Flows {
		if w.Flows[i].ID == 0 {
			w.Flows[i].ID = i + 1
		}
	}
}

// Permutation makes every host send size bytes to a distinct other host
// (a random derangement drawn with seed), all starting at 0.
func Permutation(hosts int, size uint64, seed uint64) (*Workload, error) {
	if hosts < 2 || size == 0 {
		return nil, fmt.Errorf("workload: permutation of %d hosts, %d bytes: want >= 2 hosts and a size", hosts, size)
	}
	r := rand.New(rand.NewPCG(seed, 0x9e37))
	perm := make([]int, hosts)
	for i := range perm {
		perm[i] = i
	}
	// Sattolo's algorithm: a uniformly random cyclic permutation, so no
	// host sends to itself.
	for i := hosts - 1; i > 0; i-- {
		j := r.IntN(i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	w := &Workload{Name: fmt.Sprintf("permutation-%d", hosts)}
	for i, d := range perm {
		w.Flows = append(w.Flows, Flow{Src: i, Dst: d, Size: size})
	}
	w.number()
	return w, nil
}

// Incast makes hosts 1..senders send size bytes each to host 0. With
// victimSrc >= 0, host victimSrc also sends size bytes to host victimDst,
// tagged "victim": choose a destination under the same T0 as host 0, so
// that the victim crosses the congested switch but not the congested
// port (what PFC's head-of-line blocking hurts).
func Incast(senders int, size uint64, victimSrc, victimDst int) (*Workload, error) {
	if senders < 1 || size == 0 {
		return nil, fmt.Errorf("workload: incast of %d senders, %d bytes", senders, size)
	}
	w := &Workload{Name: fmt.Sprintf("incast-%dto1", senders)}
	for s := 1; s <= senders; s++ {
		w.Flows = append(w.Flows, Flow{Src: s, Dst: 0, Size: size})
	}
	if victimSrc >= 0 {
		if victimSrc <= senders || victimDst == 0 || victimDst == victimSrc {
			return nil, fmt.Errorf("workload: victim %d->%d overlaps the incast (hosts 0..%d)", victimSrc, victimDst, senders)
		}
		w.Flows = append(w.Flows, Flow{Src: victimSrc, Dst: victimDst, Size: size, Tag: "victim"})
	}
	w.number()
	return w, nil
}

// AllToAll makes every host send size bytes to every other host. Parallel
// starts them all at 0; otherwise each host sends to the others one after
// another (host i to i+1, i+2, …), each flow started when the previous
// one is acknowledged, as htsim's serial all-to-all does.
func AllToAll(hosts int, size uint64, parallel bool) (*Workload, error) {
	if hosts < 2 || size == 0 {
		return nil, fmt.Errorf("workload: all-to-all of %d hosts, %d bytes", hosts, size)
	}
	w := &Workload{Name: fmt.Sprintf("alltoall-%d", hosts)}
	trig := 0
	for i := range hosts {
		for k := 1; k < hosts; k++ {
			f := Flow{Src: i, Dst: (i + k) % hosts, Size: size}
			if !parallel {
				if k > 1 {
					f.Trigger = trig
				}
				if k < hosts-1 {
					trig++
					w.Triggers = append(w.Triggers, Trigger{ID: trig, Kind: Oneshot})
					f.SendDoneTrigger = trig
				}
			}
			w.Flows = append(w.Flows, f)
		}
	}
	w.number()
	return w, nil
}

// RingAllReduce is a ring all-reduce of size bytes over hosts, as NCCL
// runs it: 2(n−1) steps, in each of which host i sends one n-th of the
// buffer to host i+1, cut into chunks that are pipelined. The flow of
// step s, chunk c starts once host i has received chunk c of step s−1
// and has sent chunk c−1 of step s.
func RingAllReduce(hosts int, size uint64, chunks int) (*Workload, error) {
	if hosts < 2 || chunks < 1 || size < uint64(hosts*chunks) {
		return nil, fmt.Errorf("workload: ring all-reduce of %d bytes over %d hosts in %d chunks", size, hosts, chunks)
	}
	n := hosts
	steps := 2 * (n - 1)
	piece := size / uint64(n)
	w := &Workload{Name: fmt.Sprintf("allreduce-%d", n)}
	// Trigger (s, i, c) starts flow (s, i, c); ids from 1.
	tid := func(s, i, c int) int { return 1 + (s*n+i)*chunks + c }
	for s := range steps {
		for i := range n {
			for c := range chunks {
				deps := 0
				if s > 0 {
					deps++
				}
				if c > 0 {
					deps++
				}
				if deps > 0 {
					w.Triggers = append(w.Triggers, Trigger{ID: tid(s, i, c), Kind: Barrier, Count: deps})
				}
			}
		}
	}
	for s := range steps {
		for i := range n {
			for c := range chunks {
				sz := piece / uint64(chunks)
				if c == chunks-1 {
					sz = piece - sz*uint64(chunks-1)
				}
				f := Flow{Src: i, Dst: (i + 1) % n, Size: sz}
				if s > 0 || c > 0 {
					f.Trigger = tid(s, i, c)
				}
				if s+1 < steps {
					f.RecvDoneTrigger = tid(s+1, (i+1)%n, c)
				}
				if c+1 < chunks {
					f.SendDoneTrigger = tid(s, i, c+1)
				}
				w.Flows = append(w.Flows, f)
			}
		}
	}
	w.number()
	return w, nil
}
