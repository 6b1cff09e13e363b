package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any document either fails with an *Error naming the file, or
// gives a named scenario.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.yaml")
	presets, _ := filepath.Glob("presets/*.yaml")
	files = append(files, presets...)
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("workload: {pattern: permutation, size: 1MiB}\ntopology: {kind: clos2, hosts: 8, radix: 4}\n"))
	f.Add([]byte("- a list\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, source{file: "f.yaml", dir: "."}, "f")
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.File != "f.yaml" {
				t.Fatalf("error %v is not an *Error naming f.yaml", err)
			}
			return
		}
		if s.Name == "" {
			t.Fatal("a parsed scenario without a name")
		}
	})
}
