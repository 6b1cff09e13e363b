package chakra

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Load reads a job's traces from the file system, one file per rank, as
// ASTRA-sim names them: PREFIX.0.et, PREFIX.1.et, …. name is the prefix,
// one of the series' files, or a directory holding one such series. Every rank from 0 to the
// highest must be present. Each trace is parsed and checked; an error
// names the file.
func Load(name string) ([]*Trace, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("chakra: %w", err)
	}
	root := filepath.VolumeName(abs) + string(filepath.Separator)
	rel := filepath.ToSlash(strings.TrimPrefix(abs, root))
	return LoadFS(os.DirFS(root), rel, name)
}

// LoadFS is Load in fsys: name is a slash-separated path in it, shown as
// display in errors (its own name when display is empty).
func LoadFS(fsys fs.FS, name, display string) ([]*Trace, error) {
	if display == "" {
		display = name
	}
	files, err := rankFiles(fsys, name, display)
	if err != nil {
		return nil, err
	}
	traces := make([]*Trace, len(files))
	for r, f := range files {
		shown := path.Join(path.Dir(display), path.Base(f))
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("chakra: %s: %w", shown, err)
		}
		t, err := Parse(b)
		if err == nil {
			err = t.Check()
		}
		if err != nil {
			return nil, fmt.Errorf("%s (rank %d): %w", shown, r, err)
		}
		traces[r] = t
	}
	return traces, nil
}

// rankFiles lists the files of ranks 0..n-1 for a prefix or a directory.
func rankFiles(fsys fs.FS, name, display string) ([]string, error) {
	prefix := name
	if p, _, ok := splitRank(name); ok {
		// One rank's file names its series.
		prefix, display = p, strings.TrimSuffix(display, name[len(p):])
	}
	if st, err := fs.Stat(fsys, name); err == nil && st.IsDir() {
		matches, _ := fs.Glob(fsys, path.Join(name, "*.et"))
		prefixes := map[string]bool{}
		for _, m := range matches {
			if p, _, ok := splitRank(m); ok {
				prefixes[p] = true
			}
		}
		if len(prefixes) != 1 {
			return nil, fmt.Errorf("chakra: %s: want one series of NAME.RANK.et files, found %d", display, len(prefixes))
		}
		for p := range prefixes {
			prefix = p
		}
		display = path.Join(display, path.Base(prefix))
	}
	matches, _ := fs.Glob(fsys, prefix+".*.et")
	ranks := map[int]string{}
	for _, m := range matches {
		if p, r, ok := splitRank(m); ok && p == prefix {
			ranks[r] = m
		}
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("chakra: %s: no trace files (want %s.0.et, %s.1.et, …)", display, display, display)
	}
	keys := make([]int, 0, len(ranks))
	for r := range ranks {
		keys = append(keys, r)
	}
	sort.Ints(keys)
	files := make([]string, len(keys))
	for i, r := range keys {
		if r != i {
			return nil, fmt.Errorf("chakra: %s: rank %d has no trace file (%s.%d.et)", display, i, display, i)
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
