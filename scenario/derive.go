package scenario

// Derive parses data, a scenario document derived from s (a cell of a
// sweep: s's YAML with some values replaced), as if it had been read
// from where s was: relative input files resolve against s's directory
// (or its preset's). name is the default name. Errors are *Errors whose
// lines refer to data.
func (s *Scenario) Derive(data []byte, name string) (*Scenario, error) {
	src := s.src
	src.root = nil
	return Parse(data, src, name)
}
