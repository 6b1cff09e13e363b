package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any sweep file either fails with an *Error naming the file,
// or gives a grid of 1..MaxCells cells whose every axis has values and
// whose cells' value indexes are in range.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../examples/sweeps/*.yaml")
	files = append(files, "testdata/grid.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("base: small.yaml\naxes:\n  seed: 1..3\n  transports: [[mrc], [roce-pfc]]\nzip: []\n"))
	f.Add([]byte("preset: incast\naxes:\n  failures[0].count: [1, 2]\n  failures[0].at: [1us, 2us]\nzip:\n  - [\"failures[0].count\", \"failures[0].at\"]\n"))
	f.Add([]byte("base: small.yaml\naxes: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sw, err := Parse(data, "testdata/f.yaml", Options{})
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.File != "testdata/f.yaml" {
				t.Fatalf("error %v is not an *Error naming testdata/f.yaml", err)
			}
			return
		}
		if len(sw.Axes) == 0 || sw.Len() < 1 || sw.Len() > MaxCells || len(sw.Hash) != 64 {
			t.Fatalf("%d axes, %d cells, hash %q", len(sw.Axes), sw.Len(), sw.Hash)
		}
		for _, i := range []int{0, sw.Len() / 2, sw.Len() - 1} {
			c := sw.Cell(i)
			for a, v := range c.Values {
				if v < 0 || v >= len(sw.Axes[a].Values) {
					t.Fatalf("cell %d: axis %d value %d of %d", i, a, v, len(sw.Axes[a].Values))
				}
			}
		}
	})
}
