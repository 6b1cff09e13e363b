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
