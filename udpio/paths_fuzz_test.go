package udpio_test

import (
	"strings"
	"testing"

	"github.com/openmrc/mrc/udpio"
)

// FuzzParsePathTable: any input either fails with an error naming the
// file, or gives a table in which every listed address is a distinct IPv6
// address with at least one path, and the paths are all the containers
// the file lists.
func FuzzParsePathTable(f *testing.F) {
	f.Add("# two paths to one port, one to another\npath fd00::2 fcbb:bb00:100:200:101:e01:: fcbb:bb00:100:201:101:e01::\npath fd00::3 fcbb:bb00:1100:1200:1101:1e01::\n")
	f.Add("path fd00:a:1:0::1  fcbb:bb00:101:201:102:e01::\npath fd00:a:1:0::1 fcbb:bb00:101:202:102:e01:: # again\n")
	f.Add("route x y\n")
	f.Fuzz(func(t *testing.T, in string) {
		pt, err := udpio.ParsePathTable(strings.NewReader(in), "f.paths")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.paths") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		addrs, paths := pt.Addrs(), 0
		if len(addrs) == 0 {
			t.Fatal("a table without addresses")
		}
		seen := map[string]bool{}
		for _, a := range addrs {
			if !a.Is6() || seen[a.String()] || len(pt.Paths(a)) == 0 {
				t.Fatalf("address %v: IPv6 %v, repeated %v, %d paths", a, a.Is6(), seen[a.String()], len(pt.Paths(a)))
			}
			seen[a.String()] = true
			paths += len(pt.Paths(a))
		}
		containers := 0
		for _, line := range strings.Split(in, "\n") {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) > 2 {
				containers += len(f) - 2
			}
		}
		if paths != containers {
			t.Fatalf("%d paths from %d containers", paths, containers)
		}
	})
}
