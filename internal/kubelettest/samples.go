package kubelettest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrExposition is wrapped by the errors of [SamplesOf] for a line of the
// metric that does not parse.
var ErrExposition = errors.New("malformed exposition line")

// Sample is one sample of a metric in a Prometheus text exposition.
type Sample struct {
	Labels map[string]string // label name → value, unescaped; empty for none
	Value  float64
}

// SamplesOf returns the samples of the metric name (a counter or gauge,
// labelled or not) in a Prometheus text exposition (format 0.0.4: one
// `name{label="value",...} value [timestamp]` per line), in order, such as
// those of
//
//	sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.RuntimeService/ListContainers"} 12
//
// A line of another metric is skipped unread; a line of name that does not
// parse is an error naming its line number and byte offset, wrapping
// [ErrExposition].
func SamplesOf(exposition, name string) ([]Sample, error) {
	var out []Sample
	for i, line := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		s, off, err := parseSample(rest)
		if err != nil {
			return nil, fmt.Errorf("kubelettest: %s: line %d, offset %d: %w: %s", name, i+1, len(name)+off, ErrExposition, err.Error())
		}
		out = append(out, s)
	}
	return out, nil
}

// parseSample parses what follows the metric name on a line: the labels,
// if any, and the value (and a timestamp, ignored). On error it returns the
// offset in rest where the problem is.
func parseSample(rest string) (Sample, int, error) {
	s := Sample{Labels: map[string]string{}}
	i := 0
	if rest[0] == '{' {
		i = 1
		for {
			if i < len(rest) && rest[i] == '}' {
				i++
				break
			}
			name, n := labelName(rest[i:])
			if n == 0 {
				return s, i, errors.New("want a label name or }")
			}
			i += n
			if !strings.HasPrefix(rest[i:], `="`) {
				return s, i, errors.New(`want ="`)
			}
			i += 2
			value, n, err := labelValue(rest[i:])
			if err != nil {
				return s, i + n, err
			}
			if _, dup := s.Labels[name]; dup {
				return s, i, fmt.Errorf("label %q twice", name)
			}
			s.Labels[name] = value
			i += n
			if i < len(rest) && rest[i] == ',' {
				i++
			} else if i >= len(rest) || rest[i] != '}' {
				return s, i, errors.New("want , or }")
			}
		}
	}
	f := strings.Fields(rest[i:])
	if len(f) == 0 || len(f) > 2 || (i < len(rest) && rest[i] != ' ' && rest[i] != '\t') {
		return s, i, errors.New("want a value and at most a timestamp after a space")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, i, err
	}
	s.Value = v
	return s, i, nil
}

// labelName returns the label name at the start of s ([a-zA-Z_][a-zA-Z0-9_]*)
// and its length, 0 if there is none.
func labelName(s string) (string, int) {
	n := 0
	for n < len(s) {
		c := s[n]
		if c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (n > 0 && '0' <= c && c <= '9') {
			n++
			continue
		}
		break
	}
	return s[:n], n
}

// labelValue returns the unescaped label value at the start of s, which
// follows its opening quote, and the length of s up to and including its
// closing quote. The escapes are \\, \" and \n.
func labelValue(s string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(s) {
				return "", i, errors.New("unterminated escape")
			}
			i++
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", i, fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", len(s), errors.New("unterminated label value")
}
