package config

import (
	"encoding/csv"
	"fmt"
	"strings"
)

// PinnedListEntries returns the entries (for pin.ModeCRIDockerdCompat) of a cri-dockerd list flag,
// --pinned-images or --pinned-image-labels, from its values on the command
// line, one per occurrence of the flag. Each value is read as a pflag
// StringSlice reads it, one CSV record (so "a,b" is two entries and
// "\"a,b\"" one), and the values' entries are concatenated, so both a
// repeated flag and a comma-separated one are accepted.
//
// The flags' definitions could not be read at a cri-dockerd tag: if they
// are StringArrays, a value is one entry as written, and a value that
// holds a comma or a quote reads differently (with a bare quote, as in
// "a\"b", this returns an error, as pflag's StringSlice does). A value that
// is one Docker reference holds neither, so it reads the same either way;
// a label selector with a comma in its value ("key=a,b") does not.
func PinnedListEntries(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		if v == "" {
			continue
		}
		r := csv.NewReader(strings.NewReader(v))
		rec, err := r.Read()
		if err != nil {
			return nil, fmt.Errorf("cri-dockerd list value %q: %w", v, err)
		}
		out = append(out, rec...)
	}
	return out, nil
}
