package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func newFixCmd(ctx context.Context) *cobra.Command {
	var n nodeFlags
	var write bool
	var backupDir string
	c := &cobra.Command{
		Use:   "fix",
		Short: "The remedy: the edits and steps that make the node's runtime pin its sandbox image, written with --write",
		Long: "Plans what the node needs: each configuration edit as a unified diff (the value or line that\n" +
			"answers a finding, nothing else: comments, order, quoting and line endings stay), then the steps\n" +
			"no edit answers: store the image under a newly configured name, restart what reads the edited\n" +
			"files, upgrade, run the shim. The plan is checked by resolving the edited node again in memory.\n" +
			"With --write it writes every edit or none, inside --root only, each file atomically with its mode\n" +
			"and owner, the originals kept under --backup-dir (named in the output); with --runtime-endpoint\n" +
			"it also pulls the image through CRI. First it removes the temporary files of a killed run.\n" +
			"Restarts are printed, never run. A second run finds nothing to change.\n\n" +
			"--images (what `crictl images -o json` printed) or --runtime-endpoint tell what is stored.\n\n" +
			"Without --write: exit 0 when the node needs nothing, 1 when it needs a change. With --write:\n" +
			"exit 0 when nothing is left but the printed restarts, 1 when a step remains that no edit answers\n" +
			"(an upgrade, the shim, a pull without an endpoint). 2 on error (nothing written), 3 when the\n" +
			"sandbox image cannot be told.",
		Example: "  sandboxpin fix --root /mnt/node --images images.json --kubelet-version v1.35.0\n" +
			"  sandboxpin fix --write && systemctl restart containerd",
		Args: noArgs,
	}
	n.register(c.Flags(), true)
	c.Flags().StringVar(&n.images, "images", "", "what is stored, from `FILE`, the JSON `crictl images -o json` prints (no socket is asked)")
	c.Flags().BoolVar(&write, "write", false, "write the edits (every one or none) and, with a runtime endpoint, pull")
	c.Flags().StringVar(&backupDir, "backup-dir", remedy.DefaultBackupDir, "keep the originals under `DIR` (a node path, inside --root), one directory a run")
	out := addOutput(c, "text", "json", "yaml")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		if n.images != "" && n.endpoint != "" {
			return &usageError{errors.New("--images and --runtime-endpoint: give one")}
		}
		dir := n.root
		if dir == "" {
			dir = "/"
		}
		if write {
			// Before resolving: a temporary file a killed run left in a
			// drop-in directory is read as configuration.
			removed, err := remedy.Sweep(ctx, resolve.DirFS(dir))
			for _, r := range removed {
				fmt.Fprintf(c.ErrOrStderr(), "sandboxpin: removed %s, left by a run that was killed\n", r)
			}
			if err != nil {
				return fail(exitError, "nothing written: %v", err)
			}
		}
		p, client, err := planNode(ctx, &n)
		if client != nil {
			defer client.Close()
		}
		if err != nil {
			return err
		}
		if write {
			if err := remedy.Apply(ctx, p, resolve.DirFS(dir), remedy.ApplyOptions{BackupDir: backupDir}); err != nil {
				if slices.ContainsFunc(p.Edits, func(e remedy.Edit) bool { return e.Changed }) {
					return fail(exitError, "written in part: %v", err) // another writer's file, left as it is
				}
				return fail(exitError, "nothing written: %v", err)
			}
			for i, s := range p.Steps {
				if s.Action != resolve.ActionPull || client == nil {
					continue
				}
				pctx, cancel := context.WithTimeout(ctx, pullTimeout)
				_, err := client.Pull(pctx, s.Image)
				cancel()
				if err != nil {
					return fail(exitError, "the edits are written; pulling %s: %v", s.Image, err)
				}
				p.Steps[i].Done = true
			}
		}
		err = out.print(c.OutOrStdout(), p, func() { printPlan(c.OutOrStdout(), p, write) })
		if err != nil {
			return err
		}
		switch {
		case write && p.Remains():
			return exit(exitCheck)
		case !write && !p.Empty():
			return exit(exitCheck)
		}
		return nil
	}
	return c
}

// pullTimeout bounds a pull of the sandbox image through CRI.
const pullTimeout = 5 * time.Minute

// planNode resolves and judges the node the flags name, and plans and
// verifies its remedy. The client, when one was dialled, is the caller's
// to close.
func planNode(ctx context.Context, n *nodeFlags) (*remedy.Plan, *cri.Client, error) {
	var client *cri.Client
	if n.images == "" && n.endpointToAsk() != "" {
		var err error
		if client, err = n.dial(ctx); err != nil {
			return nil, nil, fail(exitError, "%v", err)
		}
	}
	res, err := n.resolve(ctx, client)
	if err != nil {
		return nil, client, fail(exitError, "%v", err)
	}
	if err := n.unknown(res); err != nil {
		return nil, client, err
	}
	var judge func(*resolve.Result) (*audit.Verdict, error)
	switch {
	case n.images != "":
		images, err := readImages(n.images)
		if err != nil {
			return nil, client, fail(exitError, "%v", err)
		}
		obs := audit.ListedObservation{Images: images}
		judge = func(r *resolve.Result) (*audit.Verdict, error) { return audit.Judge(r, obs) }
	case client != nil:
		rctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		images, err := client.Images(rctx)
		if err != nil {
			return nil, client, fail(exitError, "%v", err)
		}
		judge = func(r *resolve.Result) (*audit.Verdict, error) {
			found, err := lookup(rctx, client, r.SandboxImage)
			if err != nil {
				return nil, err
			}
			return audit.Judge(r, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: found})
		}
	}
	var v *audit.Verdict
	if judge != nil {
		if v, err = judge(res); err != nil {
			return nil, client, fail(exitError, "%v", err)
		}
	}
	p, err := remedy.For(ctx, res, v, n.rootFS())
	if err != nil {
		return nil, client, fail(exitError, "%v", err)
	}
	vctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := remedy.Verify(vctx, p, n.options(client), judge); err != nil {
		return nil, client, fail(exitError, "%w", err)
	}
	return p, client, nil
}

// printPlan writes fix's text: each edit's diff, then the steps.
func printPlan(w io.Writer, p *remedy.Plan, write bool) {
	if p.Empty() {
		fmt.Fprintln(w, "Nothing to change: the node needs no edit and no step.")
		return
	}
	for _, e := range p.Edits {
		for _, c := range e.Changes {
			fmt.Fprintf(w, "# %s: %s\n", strings.Join(kinds(c.Answers), ", "), c.Message)
		}
		fmt.Fprint(w, e.Diff)
		switch {
		case e.Changed && e.Create:
			fmt.Fprintf(w, "# written: %s (new)\n", e.Path)
		case e.Changed:
			fmt.Fprintf(w, "# written: %s (the original under %s)\n", e.Path, p.Backup)
		}
		fmt.Fprintln(w)
	}
	if len(p.Steps) > 0 {
		fmt.Fprintln(w, "Then:")
	}
	for i, s := range p.Steps {
		done := ""
		switch {
		case s.Done:
			done = " (done)"
		case s.Alternative:
			done = " (or, where that cannot be done)"
		}
		fmt.Fprintf(w, "%d. %s%s: %s\n", i+1, s.Action, done, s.Message)
		for _, cmd := range s.Commands {
			fmt.Fprintf(w, "     %s\n", cmd)
		}
		for _, alt := range s.Alternatives {
			fmt.Fprintln(w, "   or, where that cannot be done:")
			for _, cmd := range alt {
				fmt.Fprintf(w, "     %s\n", cmd)
			}
		}
	}
	if !write && len(p.Edits) > 0 {
		fmt.Fprintln(w, "\nNothing was written: run again with --write to write the edits.")
	}
}

func kinds(ks []resolve.Kind) []string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return s
}
