package workload

import (
	"strings"
	"testing"
)

func TestPermutation(t *testing.T) {
	w, err := Permutation(100, 1000, 7)
	if err != nil {
		t.Fatal(err)
	}
	dst := map[int]bool{}
	for _, f := range w.Flows {
		if f.Src == f.Dst || dst[f.Dst] {
			t.Fatalf("flow %+v: self or repeated destination", f)
		}
		dst[f.Dst] = true
	}
	if len(w.Flows) != 100 || len(dst) != 100 || w.Bytes() != 100_000 {
		t.Errorf("%d flows, %d destinations", len(w.Flows), len(dst))
	}
	w2, _ := Permutation(100, 1000, 7)
	for i := range w.Flows {
		if w.Flows[i] != w2.Flows[i] {
			t.Fatal("same seed, different permutation")
		}
	}
	if err := w.Validate(100); err != nil {
		t.Error(err)
	}
}

func TestIncast(t *testing.T) {
	w, err := Incast(7, 1<<20, 9, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Flows) != 8 || w.Flows[7].Tag != "victim" || w.Flows[3].Dst != 0 {
		t.Errorf("flows %+v", w.Flows)
	}
	if _, err := Incast(7, 1, 3, 1); err == nil {
		t.Error("victim among the senders accepted")
	}
}

func TestAllToAll(t *testing.T) {
	w, _ := AllToAll(5, 100, false)
	if len(w.Flows) != 20 || len(w.Triggers) != 15 {
		t.Fatalf("%d flows, %d triggers", len(w.Flows), len(w.Triggers))
	}
	if err := w.Validate(5); err != nil {
		t.Fatal(err)
	}
	p, _ := AllToAll(5, 100, true)
	if len(p.Triggers) != 0 {
		t.Error("parallel all-to-all has triggers")
	}
}

func TestRingAllReduce(t *testing.T) {
	const n, chunks = 4, 3
	w, err := RingAllReduce(n, 1200, chunks)
	if err != nil {
		t.Fatal(err)
	}
	steps := 2 * (n - 1)
	if len(w.Flows) != steps*n*chunks {
		t.Fatalf("%d flows", len(w.Flows))
	}
	if err := w.Validate(n); err != nil {
		t.Fatal(err)
	}
	// Each host sends 2(n-1)/n of the buffer.
	sent := map[int]uint64{}
	started := 0
	for _, f := range w.Flows {
		sent[f.Src] += f.Size
		if f.Trigger == 0 {
			started++
		}
		if f.Dst != (f.Src+1)%n {
			t.Fatalf("flow %+v is not to the ring neighbour", f)
		}
	}
	for h, b := range sent {
		if b != 1200*uint64(steps)/n {
			t.Errorf("host %d sends %d bytes, want %d", h, b, 1200*steps/n)
		}
	}
	if started != n {
		t.Errorf("%d flows start unconditionally, want one per host", started)
	}
	// Every trigger is activated exactly as many times as its count.
	acts := map[int]int{}
	for _, f := range w.Flows {
		acts[f.SendDoneTrigger]++
		acts[f.RecvDoneTrigger]++
	}
	for _, tr := range w.Triggers {
		if acts[tr.ID] != tr.Count {
			t.Errorf("trigger %d: %d activations, count %d", tr.ID, acts[tr.ID], tr.Count)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		w    Workload
		want string
	}{
		{Workload{Flows: []Flow{{ID: 1, Src: 0, Dst: 0, Size: 1}}}, "both host 0"},
		{Workload{Flows: []Flow{{ID: 1, Src: 0, Dst: 9, Size: 1}}}, "hosts are 0..3"},
		{Workload{Flows: []Flow{{ID: 1, Src: 0, Dst: 1}}}, "size 0"},
		{Workload{Flows: []Flow{{ID: 1, Src: 0, Dst: 1, Size: 1, Trigger: 5}}}, "trigger 5"},
		{Workload{Triggers: []Trigger{{ID: 1, Kind: Barrier}}}, "count"},
	} {
		err := tc.w.Validate(4)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.w, err, tc.want)
		}
	}
}
