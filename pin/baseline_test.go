package pin

import (
	"regexp"
	"strings"
)

// compileCRIORegexps builds the regexps CRI-O builds from pinned_images (as
// read in its internal/storage/image.go), the baseline for ModeCRIOCompat. Like
// CRI-O it panics on "*".
func compileCRIORegexps(patterns []string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		var expr string
		switch {
		case strings.HasPrefix(p, "*") && strings.HasSuffix(p, "*"):
			expr = "(?i)" + regexp.QuoteMeta(p[1:len(p)-1])
		case strings.HasSuffix(p, "*"):
			expr = "(?i)" + regexp.QuoteMeta(p[:len(p)-1]) + ".*"
		default:
			expr = "(?i)^" + regexp.QuoteMeta(p) + "$"
		}
		out = append(out, regexp.MustCompile(expr))
	}
	return out
}

func crioRegexpBaseline(patterns []string, name string) bool {
	for _, re := range compileCRIORegexps(patterns) {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
