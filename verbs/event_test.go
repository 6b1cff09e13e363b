package verbs

import (
	"testing"

	"github.com/openmrc/mrc/wire"
)

// TestEventString: an EV prints as 0x and eight hex digits and a port
// mask in hex, whatever their Go types, so transcripts stay byte-exact.
func TestEventString(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventEVState, QPN: 7, EV: wire.NewEV(1, 2, 3), Plane: 2, From: EVGood, To: EVAssumedBad},
			"ev-state qp=7 ev=0xc0012003 plane=2 GOOD->ASSUMED_BAD (ecn)"},
		{Event{Kind: EventEVState, QPN: 1, EV: 0x1abcd, To: EVDenied}, "ev-state qp=1 ev=0x0001abcd plane=0 GOOD->DENIED (ecn)"},
		{Event{Kind: EventPeerPorts, QPN: 3, PortsUp: 0b1011}, "peer-ports qp=3 up=0xb"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
