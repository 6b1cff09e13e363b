package mrc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/openmrc/mrc/verbs"
)

// TestCtrlQueueKeepsProbeAnswers: a full control queue drops its oldest
// SACK that does not answer a probe, never a probe answer while another
// entry can go.
func TestCtrlQueueKeepsProbeAnswers(t *testing.T) {
	var c ctrlQueue
	for i := range ctrlQueueLen {
		// Probe answers at 0, 1 and 5; plain SACKs elsewhere.
		if c.push(ctrlPkt{kind: verbs.KindSACK, seq: uint16(i), probe: i < 2 || i == 5}) {
			t.Fatalf("push %d dropped into a queue with room", i)
		}
	}
	if !c.push(ctrlPkt{kind: verbs.KindSACK, seq: 100}) {
		t.Fatal("push into a full queue reported no drop")
	}
	var got []uint16
	for c.size > 0 {
		got = append(got, c.peek().seq)
		c.pop()
	}
	if len(got) != ctrlQueueLen || got[0] != 0 || got[1] != 1 || got[2] != 3 || got[len(got)-1] != 100 {
		t.Fatalf("queue after the drop: %v; want 0 1 3 ... 100 (SACK 2 dropped)", got)
	}
	// All probe answers: the oldest goes.
	for i := range ctrlQueueLen {
		c.push(ctrlPkt{seq: uint16(i), probe: true})
	}
	c.push(ctrlPkt{seq: 200, probe: true})
	if c.peek().seq != 1 {
		t.Fatalf("head after dropping from a queue of probe answers: %d, want 1", c.peek().seq)
	}
}

// TestCtrlQueueModel checks the growing ring against a plain slice over
// random pushes and pops: the same entries in the same order, the same
// drops, whatever the ring's size and where its head has wrapped to.
func TestCtrlQueueModel(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var c ctrlQueue
		var model []ctrlPkt
		for i := range 2000 {
			if rng.IntN(3) > 0 || len(model) == 0 {
				p := ctrlPkt{seq: uint16(i), probe: rng.IntN(4) == 0}
				dropped := c.push(p)
				wantDrop := len(model) == ctrlQueueLen
				if wantDrop {
					victim := slices.IndexFunc(model, func(e ctrlPkt) bool { return !e.probe })
					model = slices.Delete(model, max(victim, 0), max(victim, 0)+1)
				}
				model = append(model, p)
				if dropped != wantDrop {
					t.Fatalf("seed %d op %d: dropped %v, want %v", seed, i, dropped, wantDrop)
				}
			} else {
				if got := c.peek().seq; got != model[0].seq {
					t.Fatalf("seed %d op %d: head %d, want %d", seed, i, got, model[0].seq)
				}
				c.pop()
				model = model[1:]
			}
			if c.size != len(model) {
				t.Fatalf("seed %d op %d: %d queued, want %d", seed, i, c.size, len(model))
			}
		}
	}
}
