package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// newWords are words no version of sandboxpin writes yet, by the JSON key
// whose value is a word of a set that may grow: what a later version's
// `audit -o json` or `resolve -o json` may hold.
var newWords = map[string]string{
	"runtime":   "youki",            // criinfo.Runtime
	"pinMode":   "youki-compat",     // pin.Mode
	"source":    "etcd-config",      // resolve.Source (and audit.Rule's free-text source)
	"role":      "registry-mirrors", // resolve.Role
	"kind":      "reboot-needed",    // resolve.Kind
	"answers":   "reboot-needed",    // resolve.Kind
	"component": "kubelet-plugin",   // resolve.Component
	"action":    "reboot",           // resolve.Action
	"urgency":   "critical",         // resolve.Urgency
	"status":    "degraded",         // audit.Status
	"spelling":  "phonetic",         // audit.Spelling
	"lookup":    "timed-out",        // audit.Lookup
}

// replaceWords replaces, anywhere in v, the value of every key of newWords
// with its new word, and counts the keys it replaced.
func replaceWords(v any, seen map[string]int) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if w, ok := newWords[k]; ok {
				if _, isString := e.(string); isString {
					v[k] = w
					seen[k]++
					continue
				}
			}
			replaceWords(e, seen)
		}
	case []any:
		for _, e := range v {
			replaceWords(e, seen)
		}
	}
}

// TestForwardCompatibleJSON: a reader built against today's types decodes
// the JSON of a later version whose every word-valued field holds a word
// it does not know, without error, and encodes it back to the same JSON
// (issue 52; before, `resolve: unknown action "reboot"`, `audit: unknown
// status "degraded"`, `criinfo: runtime "youki": unknown runtime`).
func TestForwardCompatibleJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string // the command whose JSON is read
		into func() any
		want []string // keys of newWords the output must hold
	}{
		{name: "resolve", args: []string{"resolve", "-o", "json", "--root", sampleNode},
			into: func() any { return new(resolve.Result) },
			want: []string{"runtime", "pinMode", "source", "role", "kind", "answers", "component", "action", "urgency"}},
		{name: "resolve cri-o", args: []string{"resolve", "-o", "json", "--root", "../../examples/testdata/crio-node"},
			into: func() any { return new(resolve.Result) },
			want: []string{"runtime", "pinMode", "source", "role", "kind", "component"}},
		{name: "audit", args: []string{"audit", "-o", "json", "--root", sampleNode, "--images", "../../examples/testdata/crictl-images.json"},
			into: func() any { return new(audit.Verdict) },
			want: []string{"runtime", "status", "spelling", "lookup", "kind", "answers", "component", "action", "urgency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, out, errOut := runCmd(t, tt.args...)
			var tree map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &tree), "stdout:\n%s\nstderr:\n%s", out, errOut)
			if s, ok := tree["sandbox"].(map[string]any); ok {
				s["lookup"] = "found" // an offline audit asks no lookup: the key is left out
			}
			seen := map[string]int{}
			replaceWords(tree, seen)
			for _, k := range tt.want {
				assert.Positive(t, seen[k], "the output holds no %q to replace", k)
			}
			later, err := json.Marshal(tree)
			require.NoError(t, err)

			v := tt.into()
			require.NoError(t, json.Unmarshal(later, v), "today's types decode a later version's words")
			again, err := json.Marshal(v)
			require.NoError(t, err)
			assert.JSONEq(t, string(later), string(again), "the words are kept and written back unchanged")
		})
	}
}
