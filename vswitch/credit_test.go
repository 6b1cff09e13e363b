package vswitch

import (
	"testing"

	"github.com/openmrc/mrc/wire"
)

// TestCreditFlowControl: a credit-limited port sends only while the far
// end has room for the head packet, counted in 64-byte blocks; it never
// drops for lack of buffer (the queue holds what the ingress credits let
// in); every packet it sends names the ingress port and lane whose
// credits go back upstream.
func TestCreditFlowControl(t *testing.T) {
	pkt0, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
	per := CreditBytes(wl)
	if per%CreditBlock != 0 || per < wl || per >= wl+CreditBlock {
		t.Fatalf("CreditBytes(%d) = %d", wl, per)
	}
	s := newSwitch(t, Config{Ports: 3, Queue: QueueConfig{Buffer: wl, Credits: 2 * per}})
	for i := range 5 {
		pkt := append([]byte(nil), pkt0...)
		if v := s.Enqueue(0, 1, 2, Handle(i), pkt, wl); v.Drop != DropNone {
			t.Fatalf("packet %d dropped (%v) under credit flow control", i, v.Drop)
		}
	}
	for i := range 2 {
		d, ok := s.Dequeue(0, 1)
		if !ok || d.Handle != Handle(i) || d.In != 2 || d.VL != VLData || d.WireLen != wl {
			t.Fatalf("dequeue %d: %+v, %v", i, d, ok)
		}
	}
	if s.Backlog(1) {
		t.Fatal("backlog with no credits left")
	}
	if _, ok := s.Dequeue(0, 1); ok {
		t.Fatal("sent without credits")
	}
	if got := s.Credits(1, VLData); got != 0 {
		t.Fatalf("%d bytes of credit left, want 0", got)
	}
	s.AddCredits(1, VLData, per-1)
	if s.Backlog(1) {
		t.Fatal("a packet fits in one byte less than its credit")
	}
	s.AddCredits(1, VLData, 1)
	if d, ok := s.Dequeue(0, 1); !ok || d.Handle != 2 {
		t.Fatalf("after a credit return: %+v, %v", d, ok)
	}
	if s.Counters.Dropped() != 0 {
		t.Errorf("drops %v", s.Counters.Drops)
	}
}

// TestCreditLanes: the header queue is VL 1 with credits of its own, so a
// control packet passes a data lane that has none, and data passes a
// control lane that has none.
func TestCreditLanes(t *testing.T) {
	data, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
	ctrl := ctrlPacket(t, usid(1), wire.DefaultDSCP.Control)
	if VLs := [2]int{DefaultDSCP.VL(data), DefaultDSCP.VL(ctrl)}; VLs != [2]int{VLData, VLControl} {
		t.Fatalf("lanes of data and control: %v", VLs)
	}
	s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Credits: CreditBytes(wl)}})
	s.Enqueue(0, 1, 0, 1, data, wl)
	s.Enqueue(0, 1, 0, 2, append([]byte(nil), data...), wl)
	if d, ok := s.Dequeue(0, 1); !ok || d.Handle != 1 {
		t.Fatalf("first data packet: %+v %v", d, ok)
	}
	s.Enqueue(0, 1, 0, 3, ctrl, len(ctrl))
	d, ok := s.Dequeue(0, 1)
	if !ok || d.Handle != 3 || d.VL != VLControl {
		t.Fatalf("control past a data lane without credits: %+v %v", d, ok)
	}
	// The control lane spent its own credits only.
	if got, want := s.Credits(1, VLControl), CreditBytes(wl)-CreditBytes(len(ctrl)); got != want {
		t.Errorf("control credits %d, want %d", got, want)
	}
	if _, ok := s.Dequeue(0, 1); ok {
		t.Error("data sent without data credits")
	}
}

// TestFECNAtRootOnly: with single-threshold marking under credits, a port
// whose queue grows because it sends as fast as its link allows (the
// root of congestion) marks; a port that has waited for credits (a
// victim of congestion further on) does not, unless MarkVictims, even
// once a credit has come back, until its queue has been empty.
func TestFECNAtRootOnly(t *testing.T) {
	_, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
	for _, tc := range []struct {
		name          string
		credits       int
		markVictims   bool
		wantMarkAfter bool
	}{
		{"root", 1 << 20, false, true},
		{"victim", CreditBytes(wl), false, false},
		{"victim marked", CreditBytes(wl), true, true},
	} {
		s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Credits: tc.credits, ECNK: 2 * wl, MarkVictims: tc.markVictims}})
		for i := range 5 {
			pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
			s.Enqueue(0, 1, 0, Handle(i), pkt, wl)
		}
		s.Dequeue(0, 1) // the victim spends its only credit here
		s.Dequeue(0, 1) // and waits
		s.AddCredits(1, VLData, CreditBytes(wl))
		pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
		v := s.Enqueue(0, 1, 0, 9, pkt, wl)
		if v.Marked != tc.wantMarkAfter {
			t.Errorf("%s: marked %v, want %v", tc.name, v.Marked, tc.wantMarkAfter)
		}
		// Drained, the port is no one's victim.
		for {
			if _, ok := s.Dequeue(0, 1); !ok {
				s.AddCredits(1, VLData, 1<<20)
				if _, ok := s.Dequeue(0, 1); !ok {
					break
				}
			}
		}
		if s.victim(1) {
			t.Errorf("%s: a port with an empty queue is a victim", tc.name)
		}
	}
}

// TestFlushCredits: emptying a dead port hands back each packet with the
// ingress port and lane whose credits it held.
func TestFlushCredits(t *testing.T) {
	data, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
	ctrl := ctrlPacket(t, usid(1), wire.DefaultDSCP.Control)
	s := newSwitch(t, Config{Ports: 4, Queue: QueueConfig{Credits: 1 << 20}})
	s.Enqueue(0, 1, 2, 5, data, wl)
	s.Enqueue(0, 1, 3, 6, ctrl, len(ctrl))
	type freed struct{ h, in, vl, wl int }
	var got []freed
	s.FlushCredits(1, func(h Handle, in, vl, wl int) { got = append(got, freed{int(h), in, vl, wl}) })
	want := []freed{{5, 2, VLData, wl}, {6, 3, VLControl, len(ctrl)}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || s.Backlog(1) {
		t.Fatalf("flushed %v, want %v", got, want)
	}
	if d, h := s.Queued(1); d != 0 || h != 0 {
		t.Errorf("queued %d/%d after flush", d, h)
	}
}

// lidAddr returns a host address in prefix's /64 with LID lid.
func lidAddr(prefix [16]byte, lid uint32) [16]byte {
	SetLID(&prefix, lid)
	return prefix
}

// TestDestRouting: ModeDest is D-mod-k on the destination's LID: LIDs
// 1..8 leave a switch whose group has 4 ports through ports (lid-1) mod
// 4, and through ((lid-1)/4) mod 4 one tier up (DestDiv 4), whatever the
// rest of the packet says.
func TestDestRouting(t *testing.T) {
	for _, div := range []uint32{1, 4} {
		s := newSwitch(t, Config{Ports: 8, Mode: ModeDest, DestDiv: div})
		s.AddRoute(usid(2), 48, 4, 5, 6, 7)
		for lid := uint32(1); lid <= 8; lid++ {
			for ev := range uint32(4) {
				pkt, _ := dataPacket(t, false, lidAddr(usid(2, 9), lid), ev, 10)
				out, d := s.Forward(pkt, 0)
				if want := 4 + int((lid-1)/div%4); d != DropNone || out != want {
					t.Fatalf("div %d lid %d ev %d: port %d (%v), want %d", div, lid, ev, out, d, want)
				}
			}
		}
	}
}

// TestAdaptiveRouting: ModeAdaptive sends each packet out of the
// least-loaded port of its group that is up, the static (D-mod-k) port
// on ties; a dead port is avoided from the moment it is down.
func TestAdaptiveRouting(t *testing.T) {
	s := newSwitch(t, Config{Ports: 8, Mode: ModeAdaptive})
	s.AddRoute(usid(2), 48, 4, 5, 6, 7)
	fwd := func(lid uint32) int {
		pkt, _ := dataPacket(t, false, lidAddr(usid(2, 9), lid), 0, 10)
		out, d := s.Forward(pkt, 0)
		if d != DropNone {
			t.Fatal(d)
		}
		return out
	}
	for lid := uint32(1); lid <= 4; lid++ {
		if got := fwd(lid); got != 3+int(lid) {
			t.Fatalf("idle fabric: lid %d to port %d, want the static %d", lid, got, 3+lid)
		}
	}
	// Load ports 4 and 5: LID 1 (static port 4) goes to 6, the first
	// empty port after it.
	for i, p := range []int{4, 4, 5} {
		pkt, wl := dataPacket(t, false, usid(2), 0, 10)
		s.Enqueue(0, p, 0, Handle(i), pkt, wl)
	}
	if got := fwd(1); got != 6 {
		t.Errorf("ports 4 and 5 loaded: lid 1 to port %d, want 6", got)
	}
	s.SetPortUp(6, false)
	s.SetPortUp(7, false)
	if got := fwd(1); got != 5 {
		t.Errorf("6 and 7 down, 5 less loaded than 4: port %d, want 5", got)
	}
	for _, p := range []int{4, 5} {
		s.SetPortUp(p, false)
	}
	if got := fwd(2); got != 5 {
		t.Errorf("every port down: port %d, want the static 5", got)
	}
}

// TestCreditConfigErrors: credits exclude PFC and trimming (a trimmed
// packet would change lanes after its credits were spent).
func TestCreditConfigErrors(t *testing.T) {
	for _, q := range []QueueConfig{{Credits: -1}, {Credits: 1 << 16, Lossless: true}, {Credits: 1 << 16, Trim: true}} {
		if _, err := New(Config{Ports: 2, Queue: q}); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
}
