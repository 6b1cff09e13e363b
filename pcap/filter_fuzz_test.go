package pcap

import (
	"strings"
	"testing"
)

// FuzzParseFilter: any filter string either fails with a "pcap filter:"
// error or gives a filter that is zero exactly when the string has no
// clauses, and that selects the same packets when its clauses are
// repeated.
func FuzzParseFilter(f *testing.F) {
	d := datagram(f, 64, 64)
	for _, s := range []string{"", "op=data,nack qpn=0x12", "ev=0xC0011003 plane=0,1 path=3", "addr=fd00::2 op=rtx", "qpn=99999999", "bogus"} {
		f.Add(s, d)
	}
	f.Add("op=data", []byte("junk"))
	f.Fuzz(func(t *testing.T, s string, pkt []byte) {
		flt, err := ParseFilter(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pcap filter: ") {
				t.Fatalf("error %q lacks the prefix", err)
			}
			return
		}
		if flt.Zero() != (len(strings.Fields(s)) == 0) {
			t.Fatalf("%q: Zero() = %v", s, flt.Zero())
		}
		twice, err := ParseFilter(s + " " + s)
		if err != nil {
			t.Fatalf("%q parses but twice gives %v", s, err)
		}
		for _, p := range [][]byte{pkt, d} {
			if flt.Match(p) != twice.Match(p) {
				t.Fatalf("%q: Match %v, repeated %v", s, flt.Match(p), twice.Match(p))
			}
		}
	})
}
