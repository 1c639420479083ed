package unitfile

import (
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that an error comes with a zero
// Unit, and that each entry names a section and a line of the input.
func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		u, err := Parse([]byte(in))
		if err != nil {
			if u.Entries != nil {
				t.Fatalf("Parse(%q) = %v with error %v", in, u, err)
			}
			return
		}
		lines := strings.Count(in, "\n") + 1
		for _, e := range u.Entries {
			if e.Section == "" || e.Line < 1 || e.Line > lines {
				t.Fatalf("Parse(%q): entry %+v", in, e)
			}
		}
	})
}

// FuzzWords checks that Words never panics, that each word starts within
// the input, and that words without
// whitespace or quotes, quoted and joined again, split into the same words.
func FuzzWords(f *testing.F) {
	for _, tt := range wordsTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ws, _ := Split(in, 0)
		for _, w := range ws {
			if w.Off < 0 || w.Off >= len(in) {
				t.Fatalf("Split(%q): word %+v starts outside the input", in, w)
			}
		}
		words, err := Words(in)
		if err != nil {
			if words != nil {
				t.Fatalf("Words(%q) = %q with error %v", in, words, err)
			}
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			if strings.ContainsAny(w, `"'\`) {
				return
			}
			quoted[i] = `"` + w + `"`
		}
		again, err := Words(strings.Join(quoted, " "))
		if err != nil || strings.Join(again, "\x00") != strings.Join(words, "\x00") {
			t.Fatalf("Words(%q) = %q; quoted again: %q, %v", in, words, again, err)
		}
	})
}
