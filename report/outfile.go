package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is an output file that replaces its destination only when it is
// committed: it is written under a hidden temporary name in the
// destination's directory and renamed over the destination by Commit,
// so that a run that fails, or a crash, never leaves a truncated or
// missing file where an earlier result was. A destination that exists
// and is not a regular file (a pipe, /dev/null) is written in place.
type File struct {
	*os.File
	name string // the destination
	temp bool   // File is a temporary file to rename
	done bool
}

// CreateFile starts writing the output file name. Errors name the path
// without Go's "open" prefix.
func CreateFile(name string) (*File, error) {
	if fi, err := os.Stat(name); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return nil, pathError(err)
		}
		return &File{File: f, name: name}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, unwrapPath(err))
	}
	return &File{File: f, name: name, temp: true}, nil
}

// Name returns the destination's name (not the temporary file's).
func (f *File) Name() string { return f.name }

// Commit closes the file and puts it in place of its destination, with
// the destination's permissions if it existed (else 0644).
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.File.Close()
	if f.temp && err == nil {
		mode := fs.FileMode(0o644)
		if fi, serr := os.Stat(f.name); serr == nil {
			mode = fi.Mode().Perm()
		}
		if err = os.Chmod(f.File.Name(), mode); err == nil {
			err = os.Rename(f.File.Name(), f.name)
		}
	}
	if err != nil {
		if f.temp {
			os.Remove(f.File.Name())
		}
		return fmt.Errorf("writing %s: %w", f.name, unwrapPath(err))
	}
	return nil
}

// Abort closes the file and removes it, leaving the destination as it
// was. It does nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if f.temp {
		os.Remove(f.File.Name())
	}
}

// WriteFiles writes a set of output files into dir, creating dir if
// needed: write puts them into a fresh hidden directory inside dir and
// returns their paths there; WriteFiles then moves each into dir,
// replacing the file of the same name, and returns the final paths. If
// write fails, nothing in dir changes.
func WriteFiles(dir string, write func(tmp string) ([]string, error)) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, pathError(err)
	}
	tmp, err := os.MkdirTemp(dir, ".mrc-tmp-*")
	if err != nil {
		return nil, pathError(err)
	}
	defer os.RemoveAll(tmp)
	files, err := write(tmp)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, filepath.Base(f))
		if err := os.Rename(f, out[i]); err != nil {
			return out[:i], fmt.Errorf("writing %s: %w", out[i], unwrapPath(err))
		}
	}
	return out, nil
}

// CheckDir checks that files can be written into dir, creating it if
// needed, without touching any file in it.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pathError(err)
	}
	probe, err := os.CreateTemp(dir, ".mrc-probe-*")
	if err != nil {
		return pathError(err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// pathError drops the operation ("open", "mkdir") from a file error:
// "out/r.json: permission denied".
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// unwrapPath returns the cause of a file error, without its path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
