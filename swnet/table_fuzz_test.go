package swnet

import (
	"strings"
	"testing"
)

// FuzzParseTable: any input either fails with an error naming the file, or
// gives a table a switch can be built from: ports with distinct names, and
// routes and a default that name only those ports.
func FuzzParseTable(f *testing.F) {
	for _, s := range []string{
		"switch name s mode ecmp seed 7\nport a rate 2.5G delay 10us lasthop\nport b\nqueue buffer 512KiB trim-at 64KiB ecn 16KiB 48KiB\nqueue port b buffer 1MiB\nroute 2001:db8::/32 a b\ndefault 1\n",
		"switch mode srv6 addr fcbb:bb00:101:: plane 1\nport p0 peer 02:00:00:00:00:01\nport p1\nroute fcbb:bb00:201::/48 p1\ndefault p0 # up\n",
		"switch mode stev ev-shift 8 ev-bits 2 ecn-inner pool 64 max-packet 4096 overhead 24\nport x\nport y\nqueue port y lossless xoff 64KiB xon 32KiB\ndefault x y\n",
		"frobnicate\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tb, err := ParseTable(strings.NewReader(in), "f.table")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.table") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range tb.Ports {
			if seen[p.Name] {
				t.Fatalf("port %q twice", p.Name)
			}
			seen[p.Name] = true
		}
		inRange := func(ports []int) bool {
			for _, i := range ports {
				if i < 0 || i >= len(tb.Ports) {
					return false
				}
			}
			return true
		}
		for _, r := range tb.Routes {
			if len(r.Ports) == 0 || !inRange(r.Ports) || r.Prefix != r.Prefix.Masked() {
				t.Fatalf("route %+v with %d ports", r, len(tb.Ports))
			}
		}
		if !inRange(tb.Default) {
			t.Fatalf("default %v with %d ports", tb.Default, len(tb.Ports))
		}
		if q := tb.Queues(); len(q) != len(tb.Ports) {
			t.Fatalf("a parsed table gives %d port queues for %d ports", len(q), len(tb.Ports))
		}
	})
}
