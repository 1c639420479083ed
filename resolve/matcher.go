package resolve

import (
	"fmt"
	"slices"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
)

// ExtraSource is the [pin.Match] Source of the extra patterns given to
// [Result.Matcher]: every sandboxpin program takes them from a --pin flag.
const ExtraSource = "--pin"

// Matcher compiles what must be pinned on the node r describes, the same
// for every consumer (sandboxpin check, audit, serve, the shim, the
// examples):
//
//   - the runtime's own rules, labelled "node (RUNTIME)", as
//     [Result.RuntimeMatcher] compiles them;
//   - on CRI-O (PinMode pin.ModeCRIOCompat) and on cri-dockerd 0.4.7 and
//     later (pin.ModeCRIDockerdCompat), also the sandbox image as a
//     Strict, alias-aware rule labelled "sandbox image (cri-o)": CRI-O pins
//     its pause image only under the exact name configured, and the
//     kubelet deletes it under any other (TestKubeletGC in
//     internal/kubelettest), so a correct runtime must pin every spelling;
//     cri-dockerd compares raw strings too (pin.ModeCRIDockerdCompat).
//     An image that is not a reference adds no rule (Resolve reports it as
//     a Conflict);
//   - extra, Strict patterns labelled [ExtraSource].
//
// Comparisons use the aliases Resolve used. A nil r compiles extra alone.
// Every error names the pattern and its index.
func (r *Result) Matcher(extra ...string) (*pin.Matcher, error) {
	aliases, err := r.aliasSet()
	if err != nil {
		return nil, err
	}
	var parts []*pin.Matcher
	if r != nil {
		m, err := r.runtimeMatcher(aliases)
		if err != nil {
			return nil, err
		}
		parts = append(parts, m)
		if img := r.sandboxRule(aliases); img != "" {
			m, err := pin.Compile([]string{img}, pin.WithAliases(aliases), pin.WithSource("sandbox image ("+string(r.Runtime)+")"))
			if err != nil {
				return nil, fmt.Errorf("resolve: the sandbox image: %w", err)
			}
			parts = append(parts, m)
		}
	}
	m, err := pin.Compile(extra, pin.WithAliases(aliases), pin.WithSource(ExtraSource))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ExtraSource, err)
	}
	return pin.Join(append(parts, m)...), nil
}

// RuntimeMatcher compiles the runtime's own rules, read its way: what a
// correct runtime of that release reports pinned, without the Strict
// sandbox-image rule [Result.Matcher] adds. It is r.Pins in r.PinMode,
// labelled "node (RUNTIME)", under the aliases Resolve used; in
// pin.ModeStrict, a pin that r.Conflicts reports as not a valid reference
// ([KindInvalidReference], with its file and line) adds no rule, so that
// the node's verdict can say so rather than fail; in
// pin.ModeCRIDockerdCompat, r.Pins[0] is the sandbox image, which cri-dockerd
// pins by an exact compare with repo tags (pin.WithSandboxImage), the rest
// of r.Pins its --pinned-images entries and r.PinLabels its
// --pinned-image-labels. A nil r pins nothing.
func (r *Result) RuntimeMatcher() (*pin.Matcher, error) {
	if r == nil {
		return nil, nil
	}
	aliases, err := r.aliasSet()
	if err != nil {
		return nil, err
	}
	return r.runtimeMatcher(aliases)
}

// runtimeMatcher is RuntimeMatcher under aliases.
func (r *Result) runtimeMatcher(aliases *reference.Aliases) (*pin.Matcher, error) {
	pins := r.Pins
	if (r.PinMode == pin.ModeStrict || r.PinMode == "") && slices.ContainsFunc(pins, r.invalidReference) {
		pins = slices.DeleteFunc(slices.Clone(pins), r.invalidReference)
	}
	opts := []pin.Option{pin.WithMode(r.PinMode), pin.WithAliases(aliases), pin.WithSource("node (" + string(r.Runtime) + ")")}
	if r.PinMode == pin.ModeCRIDockerdCompat {
		if r.SandboxImage != "" && len(pins) > 0 && pins[0] == r.SandboxImage {
			pins = pins[1:]
			opts = append(opts, pin.WithSandboxImage(r.SandboxImage))
		}
		opts = append(opts, pin.WithImageLabels(r.PinLabels...))
	}
	m, err := pin.Compile(pins, opts...)
	if err != nil {
		return nil, fmt.Errorf("resolve: the node's pins: %w", err)
	}
	return m, nil
}

// invalidReference reports whether r.Conflicts holds image as not a valid
// reference (KindInvalidReference).
func (r *Result) invalidReference(image string) bool {
	return slices.ContainsFunc(r.Conflicts, func(c Conflict) bool { return c.Kind == KindInvalidReference && c.A.Image == image })
}

// Aliases returns the registry aliases r was resolved with (those of
// Options, else [reference.DefaultAliases]), from r.AliasRules: compare
// names with them, as Matcher does. A nil r or a Result with nil
// AliasRules has the defaults; AliasRules that do not form a valid set
// (a hand-edited JSON) have none ([reference.NoAliases]), and Matcher
// returns their error.
func (r *Result) Aliases() *reference.Aliases {
	a, err := r.aliasSet()
	if err != nil {
		return reference.NoAliases()
	}
	return a
}

// aliasSet is Aliases with the error of invalid AliasRules.
func (r *Result) aliasSet() (*reference.Aliases, error) {
	if r == nil || r.AliasRules == nil {
		return reference.DefaultAliases(), nil
	}
	a, err := reference.NewAliases(r.AliasRules...)
	if err != nil {
		return nil, fmt.Errorf("resolve: the result's aliases: %w", err)
	}
	return a, nil
}

// aliasRules is Result.AliasRules for Options.Aliases a: nil for the
// defaults, else a's rules (an empty, non-nil slice for none).
func aliasRules(a *reference.Aliases) []reference.Alias {
	if a == nil || a == reference.DefaultAliases() {
		return nil
	}
	return a.Rules()
}

// sandboxRule returns the sandbox image when Matcher adds it as a Strict
// rule beside the runtime's own, else "".
func (r *Result) sandboxRule(aliases *reference.Aliases) string {
	if r.PinMode != pin.ModeCRIOCompat && r.PinMode != pin.ModeCRIDockerdCompat || r.SandboxImage == "" {
		return ""
	}
	if _, err := aliases.Parse(r.SandboxImage); err != nil {
		return ""
	}
	return r.SandboxImage
}
