package qptable

import "testing"

func TestAddGetRemoveReuse(t *testing.T) {
	var tab Table[*int]
	a, b := new(int), new(int)
	qa, _ := tab.Add(a, 2)
	qb, _ := tab.Add(b, 2)
	if qa != First || qb != First+1 || tab.Get(qa) != a || tab.Get(qb) != b {
		t.Fatalf("numbers %#x %#x", qa, qb)
	}
	if _, err := tab.Add(new(int), 2); err != ErrFull {
		t.Fatalf("third QP with max 2: %v", err)
	}
	if tab.Get(2) != nil || tab.Get(First+5) != nil {
		t.Fatal("Get of an unused number")
	}
	if tab.Remove(qa, b) || !tab.Remove(qa, a) || tab.Remove(qa, a) {
		t.Fatal("Remove")
	}
	c := new(int)
	if qc, _ := tab.Add(c, 2); qc != qa {
		t.Fatalf("freed number not reused: %#x", qc)
	}
	n := 0
	tab.All(func(*int) { n++ })
	if n != 2 || tab.Len() != 2 {
		t.Fatalf("All saw %d, Len %d", n, tab.Len())
	}
}
