package chakra

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any bytes parse to a trace or to an ErrFormat, never a panic,
// and a parsed trace checks without panicking.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(samples, "*", "*", "*.0.et"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if err := tr.Check(); err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("Check error %v does not wrap ErrFormat", err)
		}
	})
}
