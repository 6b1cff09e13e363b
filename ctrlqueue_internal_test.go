package mrc

import (
	"github.com/openmrc/mrc/verbs"
	"testing"
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
