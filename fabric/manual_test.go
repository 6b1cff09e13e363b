package fabric

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemove: Remove deletes exactly the namespaces of the fabric it is
// given, not those of a fabric whose ID merely starts the same way.
func TestRemove(t *testing.T) {
	needNetns(t)
	id := fmt.Sprintf("%s-%d-7", ManualPrefix, os.Getpid())
	mine := []string{id + "-h0", id + "-t0-p0-0"}
	other := fmt.Sprintf("%s-%d-77-h0", ManualPrefix, os.Getpid())
	for _, ns := range append(mine, other) {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		defer exec.Command("ip", "netns", "del", ns).Run()
	}
	n, err := Remove(id)
	if err != nil || n != len(mine) {
		t.Fatalf("Remove(%s) = %d, %v; want %d, nil", id, n, err, len(mine))
	}
	for _, ns := range mine {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			t.Errorf("%s is still there", ns)
		}
	}
	if _, err := os.Stat(filepath.Join(netnsDir, other)); err != nil {
		t.Errorf("another fabric's namespace %s went too: %v", other, err)
	}
}

// TestWriteGuide: the guide names every namespace, writes the path tables
// it points to, and ends with the command that removes the fabric.
func TestWriteGuide(t *testing.T) {
	f := build(t, Config{})
	var b strings.Builder
	if err := f.WriteGuide(&b, "mrc fabric down"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, ns := range f.Namespaces() {
		if !strings.Contains(out, "  namespace "+ns+"\n") {
			t.Errorf("guide does not list namespace %s", ns)
		}
	}
	for h := range 2 {
		if _, err := os.Stat(filepath.Join(f.Dir(), fmt.Sprintf("h%d.paths", h))); err != nil {
			t.Errorf("path table of host %d: %v", h, err)
		}
	}
	if want := "\nmrc fabric down " + f.ID() + "\n"; !strings.HasSuffix(out, want) {
		t.Errorf("guide does not end with %q:\n%s", want, out)
	}
}
