package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// knownWords is every word of every word-valued type that JSON output
// holds (docs/design.md, "Words in JSON"), by type; each must be Known.
var knownWords = map[string][]interface{ Known() bool }{
	"criinfo.Runtime": {criinfo.RuntimeContainerd, criinfo.RuntimeCRIO, criinfo.RuntimeCRIDockerd},
	"pin.Mode":        {pin.ModeStrict, pin.ModeCRIOCompat, pin.ModeCRIDockerdCompat},
	"pin.Kind": {pin.KindTag, pin.KindDigest, pin.KindImageID, pin.KindGlob, pin.KindKeyword, pin.KindExact,
		pin.KindContains, pin.KindRepository, pin.KindPrefix, pin.KindLabel, pin.KindSandbox},
	"resolve.Source": {resolve.SourceRuntimeInfo, resolve.SourceContainerdConfig, resolve.SourceCRIOConfig,
		resolve.SourceCRIDockerdFlags, resolve.SourceKubeletFlags, resolve.SourceKubeadmConfig,
		resolve.SourceRuntimeDefault, resolve.SourceKubeadmDefault},
	"resolve.Role": {resolve.RoleRuntimeUses, resolve.RoleKubeletProtects, resolve.RoleInstallerPulls},
	"resolve.Component": {resolve.ComponentContainerd, resolve.ComponentCRIO, resolve.ComponentCRIDockerd,
		resolve.ComponentKubelet, resolve.ComponentKubeadm},
	"resolve.Urgency": {resolve.UrgencyStops, resolve.UrgencyUnprotected, resolve.UrgencyOther},
	"resolve.Action": {resolve.ActionEdit, resolve.ActionRemove, resolve.ActionUpgrade, resolve.ActionShim,
		resolve.ActionRestart, resolve.ActionPull, resolve.ActionAdd, resolve.ActionLabel},
	"audit.Status":   {StatusWillNotStart, StatusAbsent, StatusUnpinned, StatusNotStoredAsConfigured, StatusOK},
	"audit.Spelling": {SpellingExact, SpellingCase, SpellingAlias},
	"audit.Lookup":   {LookupFound, LookupNotFound},
}

func init() {
	for _, k := range resolve.Kinds() {
		knownWords["resolve.Kind"] = append(knownWords["resolve.Kind"], k)
	}
}

// runtimeSpelling returns the part of word that spells a runtime other
// than as its criinfo.Runtime word ("crio" in "crio-config", "dockerd" in
// "dockerd-flags"), or "" when there is none: the rule of issue 52 is that
// a runtime is spelled as its Runtime word everywhere, and a compound word
// is that word, a dash and the rest.
func runtimeSpelling(word string) string {
	w := "-" + word + "-"
	for _, r := range []criinfo.Runtime{criinfo.RuntimeCRIDockerd, criinfo.RuntimeCRIO, criinfo.RuntimeContainerd} {
		w = strings.ReplaceAll(w, "-"+string(r)+"-", "--")
	}
	for part := range strings.SplitSeq(w, "-") {
		for _, stem := range []string{"crio", "docker", "containerd"} {
			if strings.Contains(part, stem) {
				return part
			}
		}
	}
	return ""
}

// TestWordsSpellRuntimesOneWay: no word of any word-valued type spells a
// runtime but as its criinfo.Runtime word (issue 52; before, CRI-O was
// "cri-o" as a Runtime and Component, "crio-" in Source, Kind and Mode).
func TestWordsSpellRuntimesOneWay(t *testing.T) {
	t.Parallel()
	for typ, words := range knownWords {
		for _, w := range words {
			word := fmt.Sprint(w)
			assert.True(t, w.Known(), "%s(%q).Known()", typ, word)
			assert.Empty(t, runtimeSpelling(word), "%s %q spells a runtime another way", typ, word)
		}
	}
}

// TestRuntimeSpelling: the check above finds what it must.
func TestRuntimeSpelling(t *testing.T) {
	t.Parallel()
	tests := []struct {
		word string // a word
		want string // runtimeSpelling(word)
	}{
		{word: "cri-o-config"},
		{word: "cri-dockerd-pin-alias"},
		{word: "containerd-never-pins"},
		{word: "kubelet-protects-runtime-image"},
		{word: "crio-config", want: "crio"},
		{word: "crio", want: "crio"},
		{word: "cridockerd-compat", want: "cridockerd"},
		{word: "docker-flags", want: "docker"},
		{word: "containerd-cri-disabled"},
		{word: "crio-compat", want: "crio"},
		{word: "dockerd-flags", want: "dockerd"},
		{word: "x-containerd2-y", want: "containerd2"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, runtimeSpelling(tt.word), "runtimeSpelling(%q)", tt.word)
		})
	}
}
