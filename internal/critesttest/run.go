package critesttest

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// State is what became of one spec in a critest run.
type State int

const (
	// Skipped specs did not run: skipped by the run's options, or by
	// critest itself (a feature the runtime lacks).
	Skipped State = iota
	// Passed specs ran and passed.
	Passed
	// Failed specs ran and failed, panicked, timed out or were interrupted.
	Failed
)

func (s State) String() string {
	switch s {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	}
	return "skipped"
}

// Report is a critest run: the state of each spec, by its full text (such
// as "[sig-node] Image Manager public image with tag should be pulled and
// removed [Conformance]" without ginkgo's "[It] ").
type Report map[string]State

// Count returns how many specs of r are in state s.
func (r Report) Count(s State) int {
	n := 0
	for _, st := range r {
		if st == s {
			n++
		}
	}
	return n
}

// Specs returns the specs of r in state s, sorted.
func (r Report) Specs(s State) []string {
	var out []string
	for spec, st := range r {
		if st == s {
			out = append(out, spec)
		}
	}
	sort.Strings(out)
	return out
}

// ErrReport reports a JUnit report that could not be read.
var ErrReport = errors.New("unreadable critest report")

// junit is the part of ginkgo's JUnit report (reporters/junit_report.go,
// ginkgo v2.32.1, the version critest v1.37.0 requires) that is read:
// each spec's name and its SpecState as a string.
type junit struct {
	Suites []struct {
		Cases []struct {
			Name   string `xml:"name,attr"`
			Status string `xml:"status,attr"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// itPrefix starts the name of every spec (an It node) in ginkgo's JUnit
// report; the suite's setup nodes have others ("[BeforeSuite]").
const itPrefix = "[It] "

// ParseJUnit reads the JUnit report ginkgo writes for critest
// (-ginkgo.junit-report). States other than passed, skipped and pending
// (failed, panicked, timedout, interrupted, aborted) count as Failed.
func ParseJUnit(r io.Reader) (Report, error) {
	var doc junit
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReport, err)
	}
	rep := Report{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			spec, ok := strings.CutPrefix(c.Name, itPrefix)
			if !ok {
				continue
			}
			if _, dup := rep[spec]; dup {
				return nil, fmt.Errorf("%w: spec %q appears twice", ErrReport, spec)
			}
			switch c.Status {
			case "passed":
				rep[spec] = Passed
			case "skipped", "pending":
				rep[spec] = Skipped
			default:
				rep[spec] = Failed
			}
		}
	}
	if len(rep) == 0 {
		return nil, fmt.Errorf("%w: no specs", ErrReport)
	}
	return rep, nil
}

// RunOptions configure a critest run.
type RunOptions struct {
	// Endpoint is the CRI socket critest tests, unix:///path, for the
	// runtime and the image service alike.
	Endpoint string
	// Focus, when set, is a regular expression of the only specs to run
	// (-ginkgo.focus).
	Focus string
	// Skip are regular expressions of specs not to run (-ginkgo.skip),
	// besides the benchmarks critest always skips.
	Skip []string
	// Dir receives the report and critest's output (critest.log).
	Dir string
	// Timeout bounds the run.
	Timeout time.Duration
}

// Run runs critest with o and returns its report. A run whose specs fail
// is no error (critest exits 1 then); one that writes no report is.
func Run(ctx context.Context, critest string, o RunOptions) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	report := filepath.Join(o.Dir, "junit.xml")
	args := []string{
		"--runtime-endpoint=" + o.Endpoint, "--image-endpoint=" + o.Endpoint,
		"-ginkgo.junit-report=" + report, "-ginkgo.no-color",
		// critest is a Go test binary: without this, its own default
		// of ten minutes would end a full run.
		"-test.timeout=0",
	}
	if o.Focus != "" {
		args = append(args, "-ginkgo.focus="+o.Focus)
	}
	for _, s := range o.Skip {
		args = append(args, "-ginkgo.skip="+s)
	}
	logf, err := os.Create(filepath.Join(o.Dir, "critest.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, critest, args...)
	// critest writes temporary files and pod log directories under
	// TMPDIR (os.MkdirTemp): keep them in Dir.
	cmd.Env = append(os.Environ(), "TMPDIR="+o.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	runErr := cmd.Run()
	f, err := os.Open(report)
	if err != nil {
		return nil, fmt.Errorf("critest wrote no report: %w", errors.Join(err, runErr))
	}
	defer f.Close()
	return ParseJUnit(f)
}
