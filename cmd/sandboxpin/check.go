package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// nameImage is an image known by one name: a repo tag, a repo digest or an ID.
type nameImage struct{ id, tag, digest string }

func (i nameImage) GetId() string { return i.id } //nolint:revive // the cri-api getter name
func (i nameImage) GetRepoTags() []string {
	if i.tag == "" {
		return nil
	}
	return []string{i.tag}
}

func (i nameImage) GetRepoDigests() []string {
	if i.digest == "" {
		return nil
	}
	return []string{i.digest}
}

// imageNamed classifies s as an image ID, a repo digest or a repo tag.
func imageNamed(s string) (nameImage, error) {
	if _, err := reference.ParseImageID(s); err == nil {
		return nameImage{id: s}, nil
	}
	r, err := reference.Parse(s)
	if err != nil {
		return nameImage{}, err
	}
	if r.Digest() != "" {
		return nameImage{digest: s}, nil
	}
	return nameImage{tag: s}, nil
}

func newCheckCmd(ctx context.Context) *cobra.Command {
	var (
		n          nodeFlags
		pins       []string
		useResolve bool
	)
	c := &cobra.Command{
		Use:   "check [flags] IMAGE...",
		Short: "Whether images are pinned, and by which rule",
		Long: "Whether each IMAGE (a reference, a repo digest or an image ID) is pinned by sandboxpin's rules, and by\n" +
			"which one: the node's resolved pins (with --resolve, or when no --pin is given) and the --pin patterns.\n" +
			"This is sandboxpin's verdict, what a correct runtime reports; the runtime's own flag is audit's.\n\n" +
			"Exit 0 when every IMAGE is pinned, 1 when one is not, 2 on error, 3 when the node's sandbox image\n" +
			"cannot be told.",
		Example: "  sandboxpin check registry.k8s.io/pause:3.10.1\n  sandboxpin check --pin 'quay.io/*' quay.io/team/app:1",
		Args:    minArgs("IMAGE"),
	}
	c.Flags().StringArrayVar(&pins, "pin", nil, "a pin `PATTERN` (repeatable): a reference, a digest or image ID, \"prefix*\" or \"*keyword*\"")
	c.Flags().BoolVar(&useResolve, "resolve", false, "also pin what resolving the node finds (the default when no --pin is given)")
	n.register(c.Flags(), false)
	out := addOutput(c, "text", "json", "yaml")
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := out.check(); err != nil {
			return err
		}
		images := make([]nameImage, len(args))
		for i, s := range args {
			img, err := imageNamed(s)
			if err != nil {
				return fail(exitError, "%v", err)
			}
			images[i] = img
		}
		var res *resolve.Result // nil: the --pin patterns alone
		if useResolve || len(pins) == 0 {
			var err error
			if res, err = n.resolveNode(ctx); err != nil {
				return err
			}
			if err := n.unknown(res); err != nil {
				return err
			}
		}
		m, err := res.Matcher(pins...)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		report := checkReport{Images: make([]checkedImage, len(images))}
		if res != nil {
			report.Node = &checkNode{Runtime: string(res.Runtime), SandboxImage: res.SandboxImage, Pins: res.Pins, PinMode: res.PinMode.String()}
		}
		report.Pins = append([]string{}, pins...)
		code := exitOK
		for i, img := range images {
			ci := checkedImage{Image: args[i], ID: img.id != ""}
			if got, ok := m.Explain(img); ok {
				ci.Pinned, ci.Rule = true, &checkRule{Pattern: got.Pattern, Kind: got.Kind.String(), Source: got.Source}
			} else {
				code = exitCheck
			}
			report.Images[i] = ci
		}
		if err := out.print(c.OutOrStdout(), report, func() { report.print(c.OutOrStdout(), c.ErrOrStderr()) }); err != nil {
			return err
		}
		return exit(code)
	}
	return c
}

// checkReport is what check found, as -o json and yaml print it.
type checkReport struct {
	// Node is what resolving the node gave, nil without --resolve.
	Node *checkNode `json:"node,omitempty"`
	// Pins are the --pin patterns.
	Pins   []string       `json:"pins"`
	Images []checkedImage `json:"images"`
}

type checkNode struct {
	Runtime      string   `json:"runtime"`
	SandboxImage string   `json:"sandboxImage"`
	Pins         []string `json:"pins"`
	PinMode      string   `json:"pinMode"`
}

type checkedImage struct {
	Image  string     `json:"image"`
	ID     bool       `json:"id,omitempty"` // an image ID, not a reference
	Pinned bool       `json:"pinned"`
	Rule   *checkRule `json:"rule,omitempty"`
}

type checkRule struct {
	Pattern string `json:"pattern"`
	Kind    string `json:"kind"`
	Source  string `json:"source"`
}

// print writes the text form: one line an image on w, after the rules
// they were judged by on stderr (stdout stays one line an image).
func (r *checkReport) print(w, stderr io.Writer) {
	var rules []string
	if r.Node != nil {
		rules = append(rules, fmt.Sprintf("the node's (%s, sandbox image %s): %s in %s mode",
			r.Node.Runtime, r.Node.SandboxImage, strings.Join(r.Node.Pins, ", "), r.Node.PinMode))
	}
	if len(r.Pins) > 0 {
		rules = append(rules, "--pin: "+strings.Join(r.Pins, ", "))
	}
	fmt.Fprintf(stderr, "sandboxpin's rules (what a correct runtime pins, not the runtime's own flag): %s\n", strings.Join(rules, "; "))
	for _, img := range r.Images {
		id := ""
		if img.ID {
			id = " (an image ID)"
		}
		if img.Rule == nil {
			fmt.Fprintf(w, "%s%s: not pinned\n", img.Image, id)
			continue
		}
		fmt.Fprintf(w, "%s%s: pinned by %q (%s, %s)\n", img.Image, id, img.Rule.Pattern, img.Rule.Kind, img.Rule.Source)
	}
}
