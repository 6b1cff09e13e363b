package wire

import "testing"

func TestEV(t *testing.T) {
	sport, fl := SplitEV(0x12345678)
	if sport != 0x1234 || fl != 0x5678 {
		t.Errorf("SplitEV = %#x, %#x", sport, fl)
	}
	if ev := JoinEV(0x1234, 0xF5678); ev != 0x12345678 { // flow label bits 19-16 ignored
		t.Errorf("JoinEV = %v", ev)
	}
	for _, ev := range []EV{0, 1, 0xFFFF, 0x10000, 0xFFFFFFFF, 0xDEADBEEF} {
		if JoinEV(SplitEV(ev)) != ev {
			t.Errorf("round trip of %v", ev)
		}
		if _, fl := SplitEV(ev); fl > 0xFFFF {
			t.Errorf("flow label of %v uses the top 4 bits", ev)
		}
	}
	if EV(0xAB).String() != "0x000000ab" {
		t.Errorf("String = %q", EV(0xAB).String())
	}
}

// TestEVLayout pins the EV layout: slot in bits 29-16 under the 0b11 mark,
// plane in bits 15-12, path in bits 11-0.
func TestEVLayout(t *testing.T) {
	ev := NewEV(0x2ABC, 0x9, 0x123)
	if ev != 0xEABC9123 {
		t.Fatalf("NewEV = %v, want 0xeabc9123", ev)
	}
	if slot, ok := ev.Slot(); ev.Plane() != 9 || ev.Path() != 0x123 || slot != 0x2ABC || !ok {
		t.Errorf("fields of %v: plane %d path %#x slot %#x ok %v", ev, ev.Plane(), ev.Path(), slot, ok)
	}
	if sport, _ := SplitEV(NewEV(0, 0, 0)); sport < 0xC000 {
		t.Errorf("source port %#x outside the RoCEv2 range", sport)
	}
	if _, ok := EV(0x8000_0000).Slot(); ok {
		t.Error("an EV without the slot mark has a slot")
	}
	last := NewEV(MaxEVSlots-1, MaxEVPlanes-1, MaxEVPaths-1)
	if slot, _ := last.Slot(); last != 0xFFFFFFFF || slot != MaxEVSlots-1 {
		t.Errorf("largest EV = %v", last)
	}
}
