package htsim

import (
	"errors"
	"strings"
	"testing"
)

// FuzzReadCM: any input either fails with an *Error naming the file, or
// gives a valid workload with one flow per src->dst line.
func FuzzReadCM(f *testing.F) {
	f.Add("Nodes 3\nConnections 1\nTriggers 1\n0->2 id 9 start 5000 size 64 prio 1 recv_done_trigger 7\ntrigger id 7 multishot\n")
	f.Add("Nodes 4\nConnections 2\n# all to one\n0->3 size 4096\n1->3 start 10 size 8 send_done_trigger 1\nTriggers 1\ntrigger id 1 barrier count 2\n")
	f.Add("Nodes 4\nFailures 0\n2->1 size 1 trigger 4\n")
	f.Fuzz(func(t *testing.T, in string) {
		w, nodes, err := ReadCM("f.cm", strings.NewReader(in))
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "f.cm" {
				t.Fatalf("error %v is not an *Error naming f.cm", err)
			}
			return
		}
		if err := w.Validate(nodes); err != nil {
			t.Fatalf("a read workload is invalid: %v", err)
		}
		lines := 0
		for _, l := range strings.Split(in, "\n") {
			l, _, _ = strings.Cut(l, "#")
			if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "->") {
				lines++
			}
		}
		if len(w.Flows) != lines {
			t.Fatalf("%d flows from %d flow lines", len(w.Flows), lines)
		}
	})
}

// FuzzReadTopo: any input either fails with an *Error naming the file, or
// gives two or three tiers, each with a speed and a down radix, over at
// least two nodes.
func FuzzReadTopo(f *testing.F) {
	f.Add("Nodes 16\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\n")
	f.Add("Nodes 16\nTiers 3\nPodsize 8\nTier 0\nDownlink_speed_Gbps 400\nRadix_Down 4\nRadix_Up 4\nQueue_Down 1000000\nTier 1\nDownlink_speed_Gbps 400\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 1000\nTier 2\nDownlink_speed_Gbps 400\nRadix_Down 2\n")
	f.Fuzz(func(t *testing.T, in string) {
		tf, err := ReadTopo("f.topo", strings.NewReader(in))
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "f.topo" {
				t.Fatalf("error %v is not an *Error naming f.topo", err)
			}
			return
		}
		if tf.Nodes < 2 || len(tf.Tiers) < 2 || len(tf.Tiers) > 3 {
			t.Fatalf("%d nodes, %d tiers", tf.Nodes, len(tf.Tiers))
		}
		for i, tr := range tf.Tiers {
			if tr.DownlinkGbps == 0 || tr.RadixDown == 0 {
				t.Fatalf("tier %d: %+v", i, tr)
			}
		}
	})
}
