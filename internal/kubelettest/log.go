package kubelettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// logPoll is how often the waits look at the log again; GC rounds are 10 s
// apart, so 100 ms adds little.
const logPoll = 100 * time.Millisecond

// logBuffer holds what the kubelet wrote, safe for concurrent use.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	done    bool
	exitErr error
}

// Write appends p.
func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// exit records that the process ended with err.
func (l *logBuffer) exit(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done, l.exitErr = true, err
}

// String returns everything written so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// match returns the complete lines so far that match re, at most limit of
// them (0: all), and whether the process has exited.
func (l *logBuffer) matchDone(re *regexp.Regexp, limit int) ([]string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	s := l.b.String()
	for len(s) > 0 {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok && !l.done {
			// A line still being written.
			break
		}
		s = rest
		if re.MatchString(line) {
			out = append(out, line)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, l.done, l.exitErr
}

// match returns the complete lines so far that match re, at most limit.
func (l *logBuffer) match(re *regexp.Regexp, limit int) []string {
	out, _, _ := l.matchDone(re, limit)
	return out
}

// wait polls until n lines match re.
func (l *logBuffer) wait(ctx context.Context, re *regexp.Regexp, n int) ([]string, error) {
	tick := time.NewTicker(logPoll)
	defer tick.Stop()
	for {
		lines, done, exitErr := l.matchDone(re, n)
		if len(lines) >= n {
			return lines, nil
		}
		if done {
			if exitErr == nil {
				exitErr = errors.New("exit status 0")
			}
			return lines, fmt.Errorf("%w (%w) after %d of %d lines matching %q", errExited, exitErr, len(lines), n, re)
		}
		select {
		case <-ctx.Done():
			return lines, fmt.Errorf("%w: %d of %d lines matching %q", ctx.Err(), len(lines), n, re)
		case <-tick.C:
		}
	}
}

// teeWriter writes to the buffer and the log file.
type teeWriter struct {
	buf  *logBuffer
	file io.Writer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	_, _ = w.buf.Write(p)
	return w.file.Write(p)
}
