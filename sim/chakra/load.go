package chakra

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Load reads a job's traces, one file per rank, as ASTRA-sim names them:
// PREFIX.0.et, PREFIX.1.et, …. path is the prefix, or a directory holding
// one such series. Every rank from 0 to the highest must be present. Each
// trace is parsed and checked; an error names the file.
func Load(path string) ([]*Trace, error) {
	files, err := rankFiles(path)
	if err != nil {
		return nil, err
	}
	traces := make([]*Trace, len(files))
	for r, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("chakra: %w", err)
		}
		t, err := Parse(b)
		if err == nil {
			err = t.Check()
		}
		if err != nil {
			return nil, fmt.Errorf("%s (rank %d): %w", f, r, err)
		}
		traces[r] = t
	}
	return traces, nil
}

// rankFiles lists the files of ranks 0..n-1 for a prefix or a directory.
func rankFiles(path string) ([]string, error) {
	prefix := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		matches, _ := filepath.Glob(filepath.Join(path, "*.et"))
		prefixes := map[string]bool{}
		for _, m := range matches {
			if p, _, ok := splitRank(m); ok {
				prefixes[p] = true
			}
		}
		if len(prefixes) != 1 {
			return nil, fmt.Errorf("chakra: %s: want one series of NAME.RANK.et files, found %d", path, len(prefixes))
		}
		for p := range prefixes {
			prefix = p
		}
	}
	matches, _ := filepath.Glob(prefix + ".*.et")
	ranks := map[int]string{}
	for _, m := range matches {
		if p, r, ok := splitRank(m); ok && p == prefix {
			ranks[r] = m
		}
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("chakra: %s: no trace files (want %s.0.et, %s.1.et, …)", path, prefix, prefix)
	}
	keys := make([]int, 0, len(ranks))
	for r := range ranks {
		keys = append(keys, r)
	}
	sort.Ints(keys)
	files := make([]string, len(keys))
	for i, r := range keys {
		if r != i {
			return nil, fmt.Errorf("chakra: %s: rank %d has no trace file (%s.%d.et)", path, i, prefix, i)
		}
		files[i] = ranks[r]
	}
	return files, nil
}

// splitRank splits "dir/name.12.et" into "dir/name" and 12.
func splitRank(file string) (prefix string, rank int, ok bool) {
	s, found := strings.CutSuffix(file, ".et")
	i := strings.LastIndexByte(s, '.')
	if !found || i < 0 {
		return "", 0, false
	}
	r, err := strconv.Atoi(s[i+1:])
	if err != nil || r < 0 {
		return "", 0, false
	}
	return s[:i], r, true
}
