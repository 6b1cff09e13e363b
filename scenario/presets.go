package scenario

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed presets/*.yaml presets/htsim presets/simai presets/chakra
var presetFS embed.FS

// DefaultPreset is the scenario `mrc sim` runs with no arguments.
const DefaultPreset = "default"

// Preset describes a built-in scenario.
type Preset struct {
	Name        string
	Description string
	Slow        bool // takes minutes
}

// Presets lists the built-in scenarios, the default first.
func Presets() []Preset {
	entries, _ := fs.ReadDir(presetFS, "presets")
	var out []Preset
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		s, err := LoadPreset(name)
		if err != nil {
			out = append(out, Preset{Name: name, Description: "(broken: " + err.Error() + ")"})
			continue
		}
		out = append(out, Preset{Name: name, Description: s.Description, Slow: s.Slow})
	}
	slices.SortStableFunc(out, func(a, b Preset) int {
		switch {
		case a.Name == DefaultPreset:
			return -1
		case b.Name == DefaultPreset:
			return 1
		case a.Slow != b.Slow: // slow ones last
			if a.Slow {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// LoadPreset returns the built-in scenario called name.
func LoadPreset(name string) (*Scenario, error) {
	data, err := presetFS.ReadFile(path.Join("presets", name+".yaml"))
	if err != nil || strings.ContainsAny(name, "/.") {
		var names []string
		for _, p := range Presets() {
			names = append(names, p.Name)
		}
		return nil, &Error{Msg: fmt.Sprintf("no preset %q (have %s; mrc sim --list)", name, strings.Join(names, ", "))}
	}
	return Parse(data, source{file: "preset " + name, dir: "presets", fsys: presetFS}, name)
}

// PresetFile returns the YAML of preset name, for `mrc sim --show`.
func PresetFile(name string) ([]byte, error) {
	if strings.ContainsAny(name, "/.") {
		return nil, fs.ErrNotExist
	}
	return presetFS.ReadFile(path.Join("presets", name+".yaml"))
}
