package trace_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openmrc/mrc/trace"
)

// FuzzJSONReader: the reader never panics, and whatever it accepts, the
// writer writes in a form the reader reads back to the same line: reading
// is the inverse of writing.
func FuzzJSONReader(f *testing.F) {
	for _, s := range samples {
		f.Add(trace.AppendJSON(nil, &s.r, s.host))
	}
	f.Add([]byte(`{"t":1,"kind":"sent","ev":"7"}` + "\n\n" + `{"t":2,"kind":"cwnd","cwnd":-1}`))
	f.Add([]byte(`{"t":1,"kind":"nope"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		jr := trace.NewJSONReader(bytes.NewReader(in))
		for range 100 {
			rec, err := jr.Next()
			if err != nil {
				return
			}
			line := trace.AppendJSON(nil, &rec.Record, rec.Host)
			again, err := trace.NewJSONReader(bytes.NewReader(line)).Next()
			if err != nil {
				t.Fatalf("the reader rejects the writer's %s: %v", line, err)
			}
			if back := trace.AppendJSON(nil, &again.Record, again.Host); !bytes.Equal(back, line) {
				t.Fatalf("written %s, read back and written again %s", line, back)
			}
		}
	})
}

// FuzzParseFilter: any filter string either fails with a "trace filter:"
// error, or gives a filter that keeps the same records when its clauses
// are repeated.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "kind=sent,nacked qpn=256,0x101", "t=10us..2ms ev=0xc008102f plane=0,1", "sample=100", "t=..5us", "bogus=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := trace.ParseFilter(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace filter: ") {
				t.Fatalf("error %q lacks the prefix", err)
			}
			return
		}
		twice, err := trace.ParseFilter(s + " " + s)
		if err != nil {
			t.Fatalf("%q parses but twice gives %v", s, err)
		}
		for _, smp := range samples {
			if flt.Match(&smp.r) != twice.Match(&smp.r) {
				t.Fatalf("%q on %+v: Match %v, repeated %v", s, smp.r, flt.Match(&smp.r), twice.Match(&smp.r))
			}
		}
	})
}
