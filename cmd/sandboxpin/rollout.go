package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
	"github.com/sandboxpin/sandboxpin/rollout"
)

// rolloutConfig are rollout's flags.
type rolloutConfig struct {
	n                                      nodeFlags
	mode, node, namespace, lease           string
	concurrency                            int
	prometheus, blocking, ignore           string
	window, timeZone                       string
	interval, restartTimeout, checkTimeout time.Duration
	systemd, listen, backupDir, kubeconfig string
	once                                   bool
}

// defaultRolloutListen is rollout's metrics port, the one after crishim's.
const defaultRolloutListen = ":9629"

func newRolloutCmd(ctx context.Context) *cobra.Command {
	var cfg rolloutConfig
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Fix the node as part of a fleet: plan, or write one node at a time under a cluster-wide lock, halting on failure",
		Long: "Runs on every node (deploy/kubernetes/fix runs it as a DaemonSet, with --root=/host) and, every\n" +
			"--interval, plans the node as `fix` does, judged live through the runtime's CRI socket. It\n" +
			"publishes the outcome on its Node (the sandboxpin.io/fix-* annotations, an Event when the state\n" +
			"changes) and as metrics on --metrics-listen (/metrics, /healthz): none (nothing to change),\n" +
			"by-hand (steps no edit answers: an upgrade, the shim, an edit for a person; nothing is\n" +
			"written), pending (--mode plan: the plan's files and steps, and its digest; nothing is written).\n\n" +
			"--mode write rolls the fix out: unless the rollout is halted, the node waits for one of the\n" +
			"--concurrency Leases named --lease in --namespace, checks its gates (no alert firing in\n" +
			"--prometheus-url that matches --blocking-alerts and not --ignore-alerts, the Node Ready, the\n" +
			"--window in --time-zone), plans again, writes the edits (the originals kept under --backup-dir),\n" +
			"pulls through CRI (on containerd, tags the image stored under another spelling instead),\n" +
			"labels the image containerd 1.x must be told is pinned (both through containerd's\n" +
			"images API, as `ctr images tag` and `ctr images label` do), restarts the plan's units through\n" +
			"systemd's D-Bus API\n" +
			"at --systemd-address (the runtime first, the kubelet last), and waits up to --check-timeout for\n" +
			"the runtime to answer, the Node to be Ready (its kubelet reporting since its restart, when it\n" +
			"restarted), and the live audit to say protected. Without --kubelet-version the kubelet's version\n" +
			"is the one its Node reports.\n" +
			"Then it is done, and releases the Lease. Any failure restores the originals, restarts the units\n" +
			"again, marks the node failed and halts the rollout on every node (the sandboxpin.io/halted\n" +
			"annotation on the Lease) until a person lifts it:\n\n" +
			"  kubectl -n sandboxpin annotate lease sandboxpin-fix sandboxpin.io/halted-\n\n" +
			"Stopped while it waits for the lock, it writes nothing; a write under way runs to its end (done,\n" +
			"or restored), which the pod's grace period must allow: --restart-timeout plus --check-timeout.\n\n" +
			"It keeps running, publishing and serving metrics, whatever happens; --once runs one pass and\n" +
			"exits: 0, or 1 when the fix failed (restored, the rollout halted), 2 on error.",
		Example: "  sandboxpin rollout --root /host --node \"$NODE_NAME\"                 # plan mode: publish only\n" +
			"  sandboxpin rollout --root /host --mode write --window 02:00-05:00 \\\n" +
			"      --prometheus-url http://prometheus.monitoring:9090",
		Args: noArgs,
	}
	f := c.Flags()
	cfg.n.register(f, true)
	f.Lookup("kubelet-version").Usage += " (default: the version the Node reports)"
	f.StringVar(&cfg.mode, "mode", "plan", "`MODE`: plan (publish the plan, write nothing) or write (roll the fix out)")
	f.StringVar(&cfg.node, "node", os.Getenv("NODE_NAME"), "this node's `NAME` (default $NODE_NAME)")
	f.StringVar(&cfg.namespace, "namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), "sandboxpin"), "the `NAMESPACE` of the Leases (default $POD_NAMESPACE, else sandboxpin)")
	f.StringVar(&cfg.lease, "lease", rollout.DefaultLease, "the first Lease's `NAME`; it also holds the halt")
	f.IntVar(&cfg.concurrency, "concurrency", 1, "how many nodes write at once (`N` Leases)")
	f.StringVar(&cfg.prometheus, "prometheus-url", "", "the Prometheus `URL` whose firing alerts block the rollout (\"\": no alert check)")
	f.StringVar(&cfg.blocking, "blocking-alerts", ".+", "a firing alert whose name matches this `REGEXP` blocks the rollout")
	f.StringVar(&cfg.ignore, "ignore-alerts", "^(Watchdog|InfoInhibitor|SandboxImageUnprotected|SandboxImageMissing|SandboxImageNotStoredAsConfigured|SandboxpinFixPending)$", "alerts whose name matches this `REGEXP` never block")
	f.StringVar(&cfg.window, "window", "", "write only in this daily window, `HH:MM-HH:MM` (\"\": any time)")
	f.StringVar(&cfg.timeZone, "time-zone", "UTC", "the `ZONE` of --window (an IANA name)")
	f.DurationVar(&cfg.interval, "interval", time.Minute, "plan again every `DURATION`")
	f.DurationVar(&cfg.restartTimeout, "restart-timeout", 2*time.Minute, "how long the restarts may take (a `DURATION`)")
	f.DurationVar(&cfg.checkTimeout, "check-timeout", 5*time.Minute, "how long (a `DURATION`) to wait for the runtime, the kubelet and a protected audit after the restarts")
	f.StringVar(&cfg.systemd, "systemd-address", "unix:path=/host/run/dbus/system_bus_socket", "the D-Bus `ADDRESS` of the node's system bus")
	f.StringVar(&cfg.listen, "metrics-listen", defaultRolloutListen, "the `ADDR` (host:port) to serve /metrics and /healthz on")
	f.StringVar(&cfg.backupDir, "backup-dir", remedy.DefaultBackupDir, "keep the originals under `DIR` (a node path, inside --root), one directory a run")
	f.StringVar(&cfg.kubeconfig, "kubeconfig", "", "a kubeconfig `FILE` (\"\": the pod's in-cluster config)")
	f.BoolVar(&cfg.once, "once", false, "run one pass, then exit")
	c.RunE = func(c *cobra.Command, _ []string) error {
		fx, err := cfg.fixer(c.ErrOrStderr())
		if err != nil {
			return err
		}
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.listen)
		if err != nil {
			return fail(exitError, "--metrics-listen: %v", err)
		}
		stop := serveFixMetrics(ctx, ln, fx.metrics.reg, fx.log)
		defer stop()
		if err := fx.loop(ctx, cfg.interval, cfg.once); err != nil {
			return fail(exitError, "%v", err)
		}
		if fx.failures > 0 {
			return exit(exitCheck)
		}
		return nil
	}
	return c
}

// fixer builds the loop the flags describe, talking to the cluster.
func (cfg *rolloutConfig) fixer(stderr io.Writer) (*fixer, error) {
	if cfg.mode != "plan" && cfg.mode != "write" {
		return nil, &usageError{fmt.Errorf("--mode %q: plan or write", cfg.mode)}
	}
	if cfg.node == "" {
		return nil, &usageError{errors.New("--node is empty and $NODE_NAME unset: give this node's name")}
	}
	if cfg.interval <= 0 || cfg.restartTimeout <= 0 || cfg.checkTimeout <= 0 {
		return nil, &usageError{errors.New("--interval, --restart-timeout and --check-timeout must be positive")}
	}
	if cfg.concurrency < 1 {
		return nil, &usageError{fmt.Errorf("--concurrency %d: at least 1", cfg.concurrency)}
	}
	blocking, err := regexp.Compile(cfg.blocking)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--blocking-alerts: %w", err)}
	}
	ignore, err := regexp.Compile(cfg.ignore)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--ignore-alerts: %w", err)}
	}
	loc, err := time.LoadLocation(cfg.timeZone)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--time-zone: %w", err)}
	}
	var window rollout.Window
	if cfg.window != "" {
		if window, err = rollout.ParseWindow(cfg.window, loc); err != nil {
			return nil, &usageError{fmt.Errorf("--window: %w", err)}
		}
	}
	var rc *rest.Config
	if cfg.kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fail(exitError, "the cluster's config: %v", err)
	}
	rc.UserAgent = "sandboxpin-rollout/" + versionString()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fail(exitError, "the cluster's client: %v", err)
	}
	fx := newFixer(&cfg.n, cfg.node, cfg.mode == "write", slog.New(slog.NewTextHandler(stderr, nil)))
	fx.client = client
	fx.kubeletFromNode = cfg.n.kubeletVersion == ""
	fx.backupDir = cfg.backupDir
	fx.liftHalt = fmt.Sprintf("kubectl -n %s annotate lease %s %s-", cfg.namespace, cfg.lease, rollout.AnnotationHalted)
	fx.restartTimeout, fx.checkTimeout = cfg.restartTimeout, cfg.checkTimeout
	fx.publisher = &rollout.Publisher{Client: client, Node: cfg.node, Component: "sandboxpin-rollout"}
	fx.halt = rollout.Halt{Client: client, Namespace: cfg.namespace, Name: cfg.lease}
	fx.lock = &rollout.Lock{Client: client, Namespace: cfg.namespace, Name: cfg.lease, Identity: cfg.node, Concurrency: cfg.concurrency}
	fx.gates = rollout.Gates{Client: client, Node: cfg.node, Prometheus: cfg.prometheus, Blocking: blocking, Ignore: ignore, Window: window}
	fx.restarter = rollout.Systemd{Address: cfg.systemd}
	return fx, nil
}

// What the loop talks to: the rollout package's types, or tests' fakes.
type (
	publisher interface {
		Publish(ctx context.Context, s rollout.Status) error
	}
	locker interface {
		Acquire(ctx context.Context) (held context.Context, release func(context.Context) error, err error)
	}
	halter interface {
		Get(ctx context.Context) (string, error)
		Set(ctx context.Context, reason string) error
	}
	gater interface {
		Check(ctx context.Context) (string, error)
	}
)

// fixer is one node's side of the rollout.
type fixer struct {
	n         *nodeFlags
	node      string
	write     bool
	backupDir string
	liftHalt  string // the command that lifts the halt
	log       *slog.Logger
	now       func() time.Time

	client    kubernetes.Interface // the Node's Ready condition
	publisher publisher
	halt      halter
	lock      locker
	gates     gater
	restarter rollout.Restarter
	// plan plans the node as fix does; the client, when not nil, is the
	// caller's to close.
	plan func(context.Context) (*remedy.Plan, *cri.Client, error)
	// runtimeUp asks the runtime's CRI socket for its version (Version,
	// then the verbose Status: cri.Client.Info, which the live resolve of
	// the audit asks too).
	runtimeUp func(context.Context) error
	// audit is the live audit, as `audit` does it.
	audit func(context.Context) nodeAudit
	// labeller takes a label step (labelImage on containerd's socket).
	labeller func(ctx context.Context, name string, labels map[string]string) error
	// tagger stores containerd's image stored as from under name too
	// (tagImage on containerd's socket).
	tagger func(ctx context.Context, from, name string) error

	restartTimeout, checkTimeout, poll time.Duration

	// kubeletFromNode: the kubelet's version is the one its Node
	// reports (--kubelet-version not given), read at each pass.
	kubeletFromNode bool

	metrics  *fixMetrics
	state    rollout.State // the state last published
	canPull  bool          // the last plan's pulls can be done through CRI
	failures int           // passes that ended failed
}

// newFixer returns the fixer of the node n names, with the defaults of
// everything but the cluster's side.
func newFixer(n *nodeFlags, node string, write bool, log *slog.Logger) *fixer {
	fx := &fixer{n: n, node: node, write: write, log: log, now: time.Now,
		backupDir: remedy.DefaultBackupDir, restartTimeout: 2 * time.Minute, checkTimeout: 5 * time.Minute, poll: 2 * time.Second,
		metrics: newFixMetrics()}
	fx.plan = func(ctx context.Context) (*remedy.Plan, *cri.Client, error) { return planNode(ctx, n) }
	fx.audit = func(ctx context.Context) nodeAudit { return auditNode(ctx, n) }
	fx.labeller = func(ctx context.Context, name string, labels map[string]string) error {
		return labelImage(ctx, n.containerdEndpoint(), name, labels)
	}
	fx.tagger = func(ctx context.Context, from, name string) error {
		return tagImage(ctx, n.containerdEndpoint(), from, name)
	}
	fx.runtimeUp = func(ctx context.Context) error {
		client, err := n.dial(ctx)
		if err != nil {
			return err
		}
		if client == nil {
			return errNoSocket
		}
		defer client.Close()
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		_, err = client.Info(ctx)
		return err
	}
	return fx
}

// loop runs a pass at once and every interval until ctx ends; with once,
// one pass, whose error it returns. An error of a pass is logged: the
// next pass tries again.
func (fx *fixer) loop(ctx context.Context, interval time.Duration, once bool) error {
	for {
		err := fx.pass(ctx)
		if once {
			return err
		}
		if err != nil {
			fx.log.Error("pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// pass plans the node and publishes or rolls out the plan.
func (fx *fixer) pass(ctx context.Context) error {
	p, canPull, err := fx.planned(ctx)
	if err != nil {
		return err
	}
	if st, done := fx.judge(p, canPull); done {
		return fx.publish(ctx, st, p)
	}
	if !fx.write {
		return fx.publish(ctx, rollout.StatePending, p)
	}
	if stop, err := fx.halted(ctx, p); stop || err != nil {
		return err
	}
	// The gates first without the lock: a closed one neither takes the
	// lock nor flips the node between waiting and blocked (an Event each).
	if reason := fx.closed(ctx); reason != "" {
		return fx.publishStatus(ctx, rollout.StateBlocked, p, reason)
	}
	if err := fx.publish(ctx, rollout.StateWaiting, p); err != nil {
		return err
	}
	// The wait for the lock ends with ctx; once the lock is held, a write
	// under way runs to its end (done, or restored) though ctx ends: the
	// pod's grace period is meant to cover --restart-timeout and
	// --check-timeout. The Lease's loss still ends it.
	wait, cancelWait := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWait(nil)
	stopWait := context.AfterFunc(ctx, func() { cancelWait(context.Cause(ctx)) })
	held, release, err := fx.lock.Acquire(wait)
	if err == nil && !stopWait() {
		// ctx ended as the lock was taken: nothing is written.
		return errors.Join(ctx.Err(), release(context.WithoutCancel(ctx)))
	}
	if errors.Is(err, rollout.ErrHalted) {
		_, err = fx.halted(ctx, p)
		return err
	}
	if err != nil {
		return fmt.Errorf("the lock: %w", err)
	}
	fx.metrics.lockHeld.Set(1)
	defer func() {
		if err := release(context.WithoutCancel(ctx)); err != nil {
			fx.log.Warn("releasing the lock", "err", err)
		}
		fx.metrics.lockHeld.Set(0)
	}()
	// Another node may have failed while this one waited.
	if stop, err := fx.halted(held, p); stop || err != nil {
		return err
	}
	if reason := fx.closed(held); reason != "" {
		return fx.publishStatus(held, rollout.StateBlocked, p, reason)
	}
	return fx.roll(held, ctx)
}

// closed says why a gate is closed, "" when every one is open; a gate it
// could not check is closed.
func (fx *fixer) closed(ctx context.Context) string {
	reason, err := fx.gates.Check(ctx)
	if err != nil {
		reason = cmp.Or(reason, "a gate could not be checked") + ": " + err.Error()
	}
	return reason
}

// planned sweeps (in write mode) and plans the node; canPull says a pull
// can be done through CRI here.
func (fx *fixer) planned(ctx context.Context) (*remedy.Plan, bool, error) {
	if fx.kubeletFromNode {
		// The kubelet's own report: nodeInfo.kubeletVersion is its
		// version.Get() (pkg/kubelet/nodestatus/setters.go, VersionInfo,
		// at kubernetes v1.37.2).
		node, err := fx.client.CoreV1().Nodes().Get(ctx, fx.node, metav1.GetOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("the kubelet's version, from its Node: %w", err)
		}
		fx.n.kubeletVersion = node.Status.NodeInfo.KubeletVersion
	}
	if fx.write {
		// As fix --write: a temporary file a killed run left in a
		// drop-in directory is read as configuration.
		removed, err := remedy.Sweep(ctx, fx.n.rootFS())
		for _, r := range removed {
			fx.log.Info("removed a file a killed run left", "path", r)
		}
		if err != nil {
			return nil, false, err
		}
	}
	p, client, err := fx.plan(ctx)
	if client != nil {
		_ = client.Close()
	}
	if err == nil && client == nil {
		// Judged live or not at all: the check after a write asks the
		// runtime too.
		err = errNoSocket
	}
	fx.canPull = client != nil
	return p, fx.canPull, err
}

// judge returns the state of a plan that is not rolled out (none or
// by-hand), done true; false for a plan to write.
func (fx *fixer) judge(p *remedy.Plan, canPull bool) (rollout.State, bool) {
	fx.metrics.byHand.Set(0)
	fx.metrics.pending.Set(0)
	switch {
	case p.Empty() && (fx.state == rollout.StateDone || fx.state == rollout.StateFailed):
		return fx.state, true // the outcome stays in view
	case p.Empty():
		return rollout.StateNone, true
	case len(fx.byHand(p, canPull)) > 0:
		fx.metrics.byHand.Set(1)
		return rollout.StateByHand, true
	}
	fx.metrics.pending.Set(1)
	return "", false
}

// byHand are the steps of p that this command cannot take: all but the
// restarts of a unit the node has, the pulls and containerd's labels (when
// it has the runtime's socket) and the alternatives.
func (fx *fixer) byHand(p *remedy.Plan, canPull bool) []remedy.Step {
	var out []remedy.Step
	for _, s := range p.Steps {
		switch {
		case s.Alternative || s.Done:
		case s.Action == resolve.ActionRestart && s.Unit != "":
			if nodeUnit(fx.n.rootFS(), s.Unit) == "" {
				s.Message = fmt.Sprintf("restart %s: the node has no unit file for it, nor for the unit it may run as; %s", s.Unit, s.Message)
				out = append(out, s)
			}
		case s.Action == resolve.ActionPull && canPull:
		case s.Action == resolve.ActionLabel && canPull && isLabelStep(s):
		default:
			out = append(out, s)
		}
	}
	return out
}

// unitDirs are systemd's system unit directories (systemd.unit(5), "System
// Unit Search Path"), as resolve reads them (systemdUnitDirs,
// resolve/internal/config/cridockerd.go).
var unitDirs = []string{"etc/systemd/system", "run/systemd/system", "usr/local/lib/systemd/system", "lib/systemd/system", "usr/lib/systemd/system"}

// agentUnits: remedy names the server's unit of k3s and RKE2
// (remedy/plan.go, the restart steps); on an agent their agent's unit runs
// them instead. k3s's install.sh writes k3s.service or k3s-agent.service,
// RKE2's packages rke2-server.service and rke2-agent.service (k3sUnits,
// resolve/internal/config/k3s.go).
var agentUnits = map[string]string{"k3s.service": "k3s-agent.service", "rke2-server.service": "rke2-agent.service"}

// nodeUnit returns the unit to restart for the plan's unit: itself when
// the node has its unit file, else the agent's unit of k3s or RKE2 when
// the node has that; "" when neither.
func nodeUnit(root fs.FS, unit string) string {
	for _, u := range []string{unit, agentUnits[unit]} {
		for _, d := range unitDirs {
			if u == "" {
				break
			}
			if fi, err := fs.Stat(root, path.Join(d, u)); err == nil && !fi.IsDir() {
				return u
			}
		}
	}
	return ""
}

// halted publishes the halt and reports true when the rollout is halted.
func (fx *fixer) halted(ctx context.Context, p *remedy.Plan) (bool, error) {
	reason, err := fx.halt.Get(ctx)
	if err != nil {
		return false, fmt.Errorf("the halt: %w", err)
	}
	fx.metrics.halted.Set(b2f(reason != ""))
	if reason == "" {
		return false, nil
	}
	if fx.state == rollout.StateFailed {
		return true, nil // this node's own failure halted it: it stays failed
	}
	return true, fx.publishStatus(ctx, rollout.StateHalted, p, fmt.Sprintf("the rollout is halted: %s; to lift the halt: %s", reason, fx.liftHalt))
}

// roll writes the plan, holding the lock (ctx is the held one; parent
// outlives it, for the undoing).
func (fx *fixer) roll(ctx, parent context.Context) error {
	p, canPull, err := fx.planned(ctx)
	if err != nil {
		if errors.Is(err, remedy.ErrUnverified) {
			return fx.failed(parent, nil, nil, "the plan, made again, is refused: "+err.Error())
		}
		return err
	}
	if st, done := fx.judge(p, canPull); done {
		return fx.publish(ctx, st, p) // the node changed meanwhile
	}
	if err := cmp.Or(parent.Err(), ctx.Err()); err != nil {
		return err // stopped before writing: nothing to undo, no halt
	}
	if err := fx.publish(ctx, rollout.StateApplying, p); err != nil {
		return err
	}
	if err := remedy.Apply(ctx, p, fx.n.rootFS(), remedy.ApplyOptions{BackupDir: fx.backupDir}); err != nil {
		if !slices.ContainsFunc(p.Edits, func(e remedy.Edit) bool { return e.Changed }) && ctx.Err() != nil {
			return err // the Lease lost before any rename: nothing written, no halt
		}
		return fx.failed(parent, p, nil, "writing the edits: "+err.Error())
	}
	fx.log.Info("written", "files", editPaths(p), "backup", p.Backup)
	if err := fx.pull(ctx, p); err != nil {
		return fx.failed(parent, p, nil, err.Error())
	}
	if err := fx.label(ctx, p); err != nil {
		return fx.failed(parent, p, nil, err.Error())
	}
	units := restartUnits(p, fx.n.rootFS())
	if len(units) > 0 {
		fx.publishOrLog(ctx, rollout.StateRestarting, p)
	}
	restarted := fx.now()
	if err := fx.restart(ctx, units); err != nil {
		return fx.failed(parent, p, units, err.Error())
	}
	fx.publishOrLog(ctx, rollout.StateChecking, p)
	if err := fx.check(ctx, restarted, slices.Contains(units, "kubelet.service")); err != nil {
		return fx.failed(parent, p, units, err.Error())
	}
	fx.metrics.runs.WithLabelValues("done").Inc()
	fx.metrics.pending.Set(0)
	return fx.publishStatus(ctx, rollout.StateDone, p, "written and checked: "+summary(p))
}

// pull stores the images the plan names through CRI, as fix --write does;
// on containerd, an image the plan says is stored under another spelling
// (From) is tagged instead, through containerd's images API: the same
// image, the one in use, with no registry to reach (an offline node's
// pull fails).
func (fx *fixer) pull(ctx context.Context, p *remedy.Plan) error {
	var client *cri.Client
	defer func() {
		if client != nil {
			_ = client.Close()
		}
	}()
	for i, s := range p.Steps {
		if s.Action != resolve.ActionPull || s.Done || s.Alternative {
			continue
		}
		if s.From != "" && s.Component == resolve.ComponentContainerd {
			if err := fx.tagger(ctx, s.From, s.Image); err != nil {
				return err
			}
			p.Steps[i].Done = true
			fx.log.Info("tagged", "from", s.From, "image", s.Image)
			continue
		}
		if client == nil {
			var err error
			if client, err = fx.n.dial(ctx); err != nil || client == nil {
				return fmt.Errorf("pulling %s: %w", s.Image, cmp.Or(err, errNoSocket))
			}
		}
		pctx, cancel := context.WithTimeout(ctx, pullTimeout)
		_, err := client.Pull(pctx, s.Image)
		cancel()
		if err != nil {
			return fmt.Errorf("pulling %s: %w", s.Image, err)
		}
		p.Steps[i].Done = true
	}
	return nil
}

// restartUnits are the units of the plan's restarts as the node has them
// (nodeUnit), the runtime's first, the kubelet's last.
func restartUnits(p *remedy.Plan, root fs.FS) []string {
	var units []string
	for _, s := range p.Steps {
		if s.Action != resolve.ActionRestart || s.Unit == "" {
			continue
		}
		if u := cmp.Or(nodeUnit(root, s.Unit), s.Unit); !slices.Contains(units, u) {
			units = append(units, u)
		}
	}
	slices.SortStableFunc(units, func(a, b string) int {
		return cmp.Compare(b2i(a == "kubelet.service"), b2i(b == "kubelet.service"))
	})
	return units
}

// restart restarts units, bounded by the restart timeout.
func (fx *fixer) restart(ctx context.Context, units []string) error {
	if len(units) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, fx.restartTimeout)
	defer cancel()
	if err := fx.restarter.Restart(ctx, units...); err != nil {
		return fmt.Errorf("restarting %s: %w", strings.Join(units, ", "), err)
	}
	return nil
}

// check waits, up to the check timeout, for the runtime to answer, the
// Node to be Ready with a heartbeat after restarted (when the kubelet
// restarted) and the live audit to say protected.
func (fx *fixer) check(ctx context.Context, restarted time.Time, kubelet bool) error {
	ctx, cancel := context.WithTimeout(ctx, fx.checkTimeout)
	defer cancel()
	var why string // what is not back, as the last whole check found
	for {
		w := fx.checkOnce(ctx, restarted, kubelet)
		if w == "" {
			return nil
		}
		if ctx.Err() == nil || why == "" {
			why = w // not one the deadline cut short
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("stopped while checking (%w): %s", context.Cause(ctx), why)
			}
			return fmt.Errorf("not back within %s: %s", fx.checkTimeout, why)
		case <-time.After(fx.poll):
		}
	}
}

// checkOnce says what is not back yet, "" when everything is.
func (fx *fixer) checkOnce(ctx context.Context, restarted time.Time, kubelet bool) string {
	if err := fx.runtimeUp(ctx); err != nil {
		return "the runtime does not answer: " + err.Error()
	}
	if why := fx.nodeBack(ctx, restarted, kubelet); why != "" {
		return why
	}
	a := fx.audit(ctx)
	switch {
	case a.Err != nil:
		return "the audit: " + a.Err.Error()
	case a.exitCode() != exitOK:
		return fmt.Sprintf("the audit says %s: %s", a.Verdict.Status, a.summary())
	}
	return ""
}

// nodeBack says why the Node is not Ready (with a heartbeat after
// restarted, when the kubelet restarted), "" when it is. A restarted kubelet patches its Node's status
// at once: its first status update finds lastStatusReportTime zero
// (pkg/kubelet/kubelet_node_status.go, isUpdateStatusPeriodExpired and
// its caller, at kubernetes v1.37.2), so the Ready condition's
// lastHeartbeatTime moves past the restart. Heartbeats are whole seconds.
func (fx *fixer) nodeBack(ctx context.Context, restarted time.Time, kubelet bool) string {
	node, err := fx.client.CoreV1().Nodes().Get(ctx, fx.node, metav1.GetOptions{})
	if err != nil {
		return "the Node: " + err.Error()
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch {
		case c.Status != corev1.ConditionTrue:
			return fmt.Sprintf("the Node is not Ready (%s: %s)", c.Reason, c.Message)
		case kubelet && !c.LastHeartbeatTime.After(restarted):
			return "the kubelet has not reported since its restart"
		}
		return ""
	}
	return "the Node has no Ready condition"
}

// failed undoes a failed write: the originals back (p, when written),
// units restarted again, the node failed and the rollout halted. ctx is
// not the lock's: the undoing goes on when the Lease is lost.
func (fx *fixer) failed(ctx context.Context, p *remedy.Plan, units []string, reason string) error {
	ctx = context.WithoutCancel(ctx)
	fx.log.Error("the fix failed", "reason", reason)
	if p != nil && slices.ContainsFunc(p.Edits, func(e remedy.Edit) bool { return e.Changed }) {
		rctx, cancel := context.WithTimeout(ctx, fx.restartTimeout)
		err := remedy.Restore(rctx, p, fx.n.rootFS())
		cancel()
		if err != nil {
			reason += "; restoring the originals: " + err.Error()
		} else {
			reason += "; the originals are restored"
		}
		if len(units) > 0 {
			if err := fx.restart(ctx, units); err != nil {
				reason += "; " + err.Error()
			} else {
				reason += " and " + strings.Join(units, ", ") + " restarted"
			}
		}
	}
	fx.metrics.runs.WithLabelValues("failed").Inc()
	fx.failures++
	herr := fx.halt.Set(ctx, fmt.Sprintf("node %s: %s", fx.node, reason))
	if herr == nil {
		fx.metrics.halted.Set(1)
	}
	return errors.Join(fx.publishStatus(ctx, rollout.StateFailed, p, reason), herr)
}

// publishOrLog publishes state, logging an error: the write goes on.
func (fx *fixer) publishOrLog(ctx context.Context, state rollout.State, p *remedy.Plan) {
	if err := fx.publish(ctx, state, p); err != nil {
		fx.log.Warn("publish", "err", err)
	}
}

// publish publishes state with p's plan and the usual message.
func (fx *fixer) publish(ctx context.Context, state rollout.State, p *remedy.Plan) error {
	msg := ""
	switch state {
	case rollout.StateByHand:
		var steps []string
		for i, s := range fx.byHand(p, fx.canPull) {
			steps = append(steps, fmt.Sprintf("%d. %s: %s", i+1, s.Action, s.Message))
		}
		if len(p.Edits) > 0 {
			msg = "nothing written: "
		}
		msg += "steps for a person: " + strings.Join(steps, " ")
	case rollout.StatePending:
		msg = "mode plan: nothing written"
	case rollout.StateWaiting:
		msg = "waiting for the lock"
	case rollout.StateApplying:
		msg = "writing the edits"
	case rollout.StateRestarting:
		msg = "restarting " + strings.Join(restartUnits(p, fx.n.rootFS()), ", ")
	case rollout.StateChecking:
		msg = "waiting for the runtime, the kubelet and a protected audit"
	case rollout.StateNone:
		msg = "nothing to change"
	}
	return fx.publishStatus(ctx, state, p, msg)
}

// publishStatus publishes state on the Node and in the metrics.
func (fx *fixer) publishStatus(ctx context.Context, state rollout.State, p *remedy.Plan, msg string) error {
	s := rollout.Status{State: state, Message: msg}
	if !p.Empty() && state != rollout.StateNone {
		s.Plan, s.Digest = summary(p), digest(p)
	}
	if state != fx.state {
		fx.log.Info("state", "state", state, "message", msg)
		fx.state = state
		fx.metrics.since.Set(float64(fx.now().Unix()))
	}
	fx.metrics.setState(state)
	if err := fx.publisher.Publish(ctx, s); err != nil {
		return fmt.Errorf("publishing %s on node %s: %w", state, fx.node, err)
	}
	return nil
}

// summary is the plan in one line: its files, then its steps.
func summary(p *remedy.Plan) string {
	var parts []string
	if files := editPaths(p); len(files) > 0 {
		parts = append(parts, "edit "+strings.Join(files, ", "))
	}
	var steps []string
	for _, s := range p.Steps {
		if s.Alternative {
			continue
		}
		steps = append(steps, string(s.Action)+" "+cmp.Or(s.Unit, s.Image, s.Version, string(s.Component)))
	}
	if len(steps) > 0 {
		parts = append(parts, "then "+strings.Join(steps, ", "))
	}
	return strings.Join(parts, "; ")
}

func editPaths(p *remedy.Plan) []string {
	var files []string
	for _, e := range p.Edits {
		files = append(files, e.Path)
	}
	return files
}

// digest is "sha256:HEX" of the plan's edits and steps as JSON.
func digest(p *remedy.Plan) string {
	type unwritten struct {
		Edits []remedy.Edit `json:"edits"`
		Steps []remedy.Step `json:"steps"`
	}
	u := unwritten{Edits: slices.Clone(p.Edits), Steps: slices.Clone(p.Steps)}
	for i := range u.Edits {
		u.Edits[i].Changed = false // the plan's, written or not
	}
	for i := range u.Steps {
		u.Steps[i].Done = false
	}
	b, err := json.Marshal(u)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Metric names (a contract with deploy/kubernetes/fix's alerts and
// deploy/grafana's dashboard).
const (
	metricFixPending  = "sandboxpin_fix_pending"
	metricFixByHand   = "sandboxpin_fix_by_hand"
	metricFixState    = "sandboxpin_fix_state"
	metricFixSince    = "sandboxpin_fix_state_since_timestamp_seconds"
	metricFixHalted   = "sandboxpin_fix_halted"
	metricFixLockHeld = "sandboxpin_fix_lock_held"
	metricFixRuns     = "sandboxpin_fix_runs_total"
)

// allStates are the states sandboxpin_fix_state carries, each a series.
var allStates = []rollout.State{rollout.StateNone, rollout.StatePending, rollout.StateWaiting, rollout.StateBlocked,
	rollout.StateApplying, rollout.StateRestarting, rollout.StateChecking, rollout.StateDone, rollout.StateFailed,
	rollout.StateHalted, rollout.StateByHand}

// fixMetrics are rollout's metrics, in a registry of their own.
type fixMetrics struct {
	reg                                      *prometheus.Registry
	pending, byHand, since, halted, lockHeld prometheus.Gauge
	state                                    *prometheus.GaugeVec
	runs                                     *prometheus.CounterVec
}

func newFixMetrics() *fixMetrics {
	m := &fixMetrics{reg: prometheus.NewRegistry()}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		m.reg.MustRegister(g)
		return g
	}
	m.pending = gauge(metricFixPending, "1 when the node has a plan with edits not yet written.")
	m.byHand = gauge(metricFixByHand, "1 when the node's plan has steps that need a person.")
	m.since = gauge(metricFixSince, "When the node entered its state in the rollout (Unix seconds).")
	m.halted = gauge(metricFixHalted, "1 when the rollout is halted, as this node last saw it.")
	m.lockHeld = gauge(metricFixLockHeld, "1 while this node holds a Lease of the rollout's lock.")
	m.state = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricFixState,
		Help: "1 for the node's state in the rollout, 0 for the other states."}, []string{"state"})
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricFixRuns,
		Help: "Writes of the fix on this node, by outcome (done, failed)."}, []string{"outcome"})
	m.reg.MustRegister(m.state, m.runs)
	m.setState("")
	m.runs.WithLabelValues("done")
	m.runs.WithLabelValues("failed")
	return m
}

// setState sets sandboxpin_fix_state: 1 for s, 0 for the others.
func (m *fixMetrics) setState(s rollout.State) {
	for _, k := range allStates {
		m.state.WithLabelValues(string(k)).Set(b2f(k == s))
	}
	if s != "" && !s.Known() {
		m.state.WithLabelValues(string(s)).Set(1)
	}
}

// serveFixMetrics serves reg on ln (/metrics, /healthz) until the returned
// stop is called or ctx ends.
func serveFixMetrics(ctx context.Context, ln net.Listener, reg *prometheus.Registry, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWait)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
