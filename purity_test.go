package mrc_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// purePackages are the protocol core: the module root, its internal core
// parts (every folder directly under internal/ but the helper folders), the
// wire format, the shared verbs vocabulary, congestion control,
// the nanosecond clock type and the virtual switch; and the sans-IO TCP
// and InfiniBand baselines (ib pulls in roce). They and every module package they import, directly or not,
// must stay pure.
var purePackages = []string{
	".", "./internal/evset", "./internal/rxwin", "./internal/psn", "./internal/timerq",
	"./internal/memreg", "./internal/qptable", "./internal/fifo", "./internal/xrand",
	"./internal/reasm", "./internal/slab", "./wire", "./cc", "./mtime", "./vswitch", "./verbs", "./tcp", "./mptcp", "./ib",
}

// helperFolders hold the packages under internal/ that are not core parts:
// the test harness (testkit) and the hosts' OS and text glue (host).
var helperFolders = []string{"testkit", "host"}

// TestCoreListCoversInternal fails when a folder directly under internal/
// is neither a core part listed in purePackages nor a helper folder, so a
// new core part cannot escape TestCoreIsPure.
func TestCoreListCoversInternal(t *testing.T) {
	entries, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || slices.Contains(helperFolders, e.Name()) {
			continue
		}
		if !slices.Contains(purePackages, "./internal/"+e.Name()) {
			t.Errorf("internal/%s is neither in purePackages nor a helper folder (%v)", e.Name(), helperFolders)
		}
	}
	for _, h := range helperFolders {
		if _, err := os.Stat(filepath.Join("internal", h)); err != nil {
			t.Errorf("helper folder: %v", err)
		}
	}
}

// impureImport says why a pure package may not import path, or "" if it
// may. time and math/rand are allowed for their types (time.Duration, a
// seeded rand.PCG); their clock and global-source functions are caught by
// impureCalls instead.
func impureImport(path string) string {
	switch {
	case path == "net", strings.HasPrefix(path, "net/") && path != "net/netip":
		return "sockets"
	case path == "os", strings.HasPrefix(path, "os/"), path == "syscall", strings.HasPrefix(path, "syscall/"):
		return "the operating system"
	case path == "sync", path == "sync/atomic":
		return "locks: the core runs on one goroutine"
	case path == "encoding/json":
		return "a host's serialisation"
	}
	return ""
}

// impureCalls are the functions of time and math/rand that read the wall
// clock, sleep or draw from the global source. Anything else (types,
// constants, constructors of seeded sources) is fine.
var impureCalls = map[string]map[string]bool{
	"time": set("Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"),
	"math/rand": set("Int", "Intn", "IntN", "Int31", "Int31n", "Int63", "Int63n", "Uint32", "Uint64",
		"Float32", "Float64", "ExpFloat64", "NormFloat64", "Perm", "Shuffle", "Seed", "Read"),
	"math/rand/v2": set("Int", "IntN", "Int32", "Int32N", "Int64", "Int64N", "Uint", "UintN", "Uint32",
		"Uint32N", "Uint64", "Uint64N", "Float32", "Float64", "ExpFloat64", "NormFloat64", "Perm", "Shuffle", "N"),
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// listedPackage is the part of `go list -json` the purity test reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct{ Path string }
	GoFiles    []string
	Imports    []string
}

// TestCoreIsPure fails when the core, or a module package it pulls in,
// imports sockets, the OS, locks or encoding/json, reads the wall clock,
// draws from the global random source or starts a goroutine. Each
// violation names the package at fault and the import chain from the core
// that pulls it in.
func TestCoreIsPure(t *testing.T) {
	pkgs, err := goList(purePackages)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, c := range coreClosure(pkgs, purePackages) {
		p := pkgs[c.path]
		for _, imp := range p.Imports {
			if why := impureImport(imp); why != "" {
				problems = append(problems, fmt.Sprintf("%s imports %s (%s)%s", p.ImportPath, imp, why, c.via))
			}
		}
		found, err := scanSources(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			problems = append(problems, f+c.via)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// reached is a module package reachable from the core, with the chain of
// imports that reaches it (" (pulled in by a → b)"; "" for a core package).
type reached struct{ path, via string }

// coreClosure walks the module imports from the core packages (given as
// ./dir patterns) breadth first, so each package is named with its
// shortest chain.
func coreClosure(pkgs map[string]*listedPackage, roots []string) []reached {
	module := ""
	var queue []reached
	parent := map[string]string{}
	for _, p := range pkgs {
		if p.Module != nil && p.ImportPath == p.Module.Path {
			module = p.Module.Path // roots include ".", the module root
		}
	}
	for _, r := range roots {
		path := module + strings.TrimPrefix(r, ".")
		parent[path] = ""
		queue = append(queue, reached{path: path})
	}
	slices.SortFunc(queue, func(a, b reached) int { return strings.Compare(a.path, b.path) })
	for i := 0; i < len(queue); i++ {
		from := queue[i].path
		for _, imp := range pkgs[from].Imports {
			q, ok := pkgs[imp]
			if _, seen := parent[imp]; seen || !ok || q.Standard || q.Module == nil || q.Module.Path != module {
				continue
			}
			parent[imp] = from
			chain := []string{imp}
			for at := from; at != ""; at = parent[at] {
				chain = append(chain, at)
			}
			slices.Reverse(chain)
			queue = append(queue, reached{path: imp, via: " (pulled in by " + strings.Join(chain, " → ") + ")"})
		}
	}
	return queue
}

// goList returns the packages matching patterns and all their
// dependencies, by import path.
func goList(patterns []string) (map[string]*listedPackage, error) {
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, patterns...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %v\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %v", err)
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
}

// scanSources parses p's non-test files and reports its go statements and
// its calls of impureCalls, each as "file:line: what".
func scanSources(p *listedPackage) ([]string, error) {
	var found []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		file := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		local := map[string]string{} // local name → import path, for time and math/rand
		for _, is := range f.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if impureCalls[path] == nil {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if path == "math/rand/v2" {
				name = "rand"
			}
			if is.Name != nil {
				name = is.Name.Name
			}
			local[name] = path
		}
		rel := filepath.Join(filepath.Base(p.Dir), name)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				found = append(found, fmt.Sprintf("%s:%d: starts a goroutine", rel, fset.Position(n.Pos()).Line))
			case *ast.SelectorExpr:
				id, ok := n.X.(*ast.Ident)
				if path := local[nameOf(id, ok)]; path != "" && impureCalls[path][n.Sel.Name] {
					found = append(found, fmt.Sprintf("%s:%d: uses %s.%s", rel, fset.Position(n.Pos()).Line, path, n.Sel.Name))
				}
			}
			return true
		})
	}
	return found, nil
}

func nameOf(id *ast.Ident, ok bool) string {
	if !ok {
		return ""
	}
	return id.Name
}

// TestPurityScanCatches: the source scan finds a goroutine, a wall-clock
// read through a renamed import and a global random draw, and lets a
// duration and a seeded source pass.
func TestPurityScanCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	clock "time"
	"math/rand/v2"
)

var d = clock.Duration(3)
var r = rand.New(rand.NewPCG(1, 2))

func f() {
	go f()
	_ = clock.Now()
	_ = rand.IntN(3)
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := scanSources(&listedPackage{Dir: dir, GoFiles: []string{"p.go"}})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(dir)
	want := []string{base + "/p.go:12: starts a goroutine", base + "/p.go:13: uses time.Now", base + "/p.go:14: uses math/rand/v2.IntN"}
	if !slices.Equal(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
}
