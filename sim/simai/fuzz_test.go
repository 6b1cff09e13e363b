package simai

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmrc/mrc/sim/job"
)

// FuzzRead: any input parses or fails with an *Error, never a panic;
// what parses builds a job (or fails cleanly) and the job compiles or
// fails cleanly.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(samples, "micro*.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("DATA\n1\nl -1 5 NONE 0 1 NONE 0 1 ALLTOALL_EP 99 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		w, err := Read("f.txt", strings.NewReader(in))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		ranks := w.Ranks(8)
		if ranks > 64 || len(w.Layers) > 64 {
			return // keep each input cheap
		}
		j, err := w.Job(ranks)
		if err != nil {
			return
		}
		j.GPUsPerServer = 2
		if _, err := job.Compile(j, 64); err != nil && !strings.HasPrefix(err.Error(), "job: ") {
			t.Fatalf("compile: %v", err)
		}
	})
}
