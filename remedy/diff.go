package remedy

import (
	"fmt"
	"slices"
	"strings"
)

// contextLines is the number of unchanged lines a hunk of a unified diff shows
// around its change, as diff -u and git diff do.
const contextLines = 3

// unified returns the unified diff of the hunks hs to t, the file at the
// node path p, with the paths relative to the root ("a/etc/…", "b/etc/…",
// so that `patch -p1 -d ROOT` applies it); created says the file is new.
func unified(p string, t *text, hs []hunk, created bool) string {
	hs = slices.Clone(hs)
	slices.SortFunc(hs, func(a, b hunk) int { return a.start - b.start })
	var b strings.Builder
	rel := strings.TrimPrefix(p, "/")
	if created {
		fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", rel)
	} else {
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", rel, rel)
	}
	shift := 0 // new line number minus old, before the group
	for i := 0; i < len(hs); {
		// A group: hunks whose contexts touch.
		j := i + 1
		for j < len(hs) && hs[j].start-(hs[j-1].start+hs[j-1].n) <= 2*contextLines {
			j++
		}
		from := max(hs[i].start-contextLines, 0)
		to := min(hs[j-1].start+hs[j-1].n+contextLines, len(t.lines))
		var body strings.Builder
		oldN, newN, at := 0, 0, from
		for _, h := range hs[i:j] {
			for ; at < h.start; at++ {
				line(&body, ' ', t.lines[at])
				oldN++
				newN++
			}
			for _, l := range t.lines[h.start : h.start+h.n] {
				line(&body, '-', l)
				oldN++
			}
			for _, l := range h.repl {
				line(&body, '+', l)
				newN++
			}
			at = h.start + h.n
		}
		for ; at < to; at++ {
			line(&body, ' ', t.lines[at])
			oldN++
			newN++
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(from, oldN), span(from+shift, newN))
		b.WriteString(body.String())
		for _, h := range hs[i:j] {
			shift += len(h.repl) - h.n
		}
		i = j
	}
	return b.String()
}

// span is a unified diff's "start,count" of count lines from the 0-based
// line start.
func span(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

// line writes one diff line: its mark, the line without its "\n" (a "\r"
// stays, as diff prints it), and the marker of a missing final newline.
func line(b *strings.Builder, mark byte, l string) {
	b.WriteByte(mark)
	if s, ok := strings.CutSuffix(l, "\n"); ok {
		b.WriteString(s)
		b.WriteByte('\n')
		return
	}
	b.WriteString(l)
	b.WriteString("\n\\ No newline at end of file\n")
}
