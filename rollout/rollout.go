package rollout

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Annotations and names that tools, alerts and people rely on (contract).
const (
	// AnnotationState is the node's [State] in the rollout.
	AnnotationState = "sandboxpin.io/fix-state"
	// AnnotationPlan is a one-line summary of the node's plan ("" when it
	// has none): the files to edit and the steps.
	AnnotationPlan = "sandboxpin.io/fix-plan"
	// AnnotationDigest is "sha256:HEX" of the plan's edits and steps as
	// JSON: the same plan on two nodes, or twice on one, has one digest.
	AnnotationDigest = "sandboxpin.io/fix-digest"
	// AnnotationSince is when the node entered its state (RFC 3339).
	AnnotationSince = "sandboxpin.io/fix-since"
	// AnnotationMessage says the state for people (why it is blocked, what
	// failed, what a person must do).
	AnnotationMessage = "sandboxpin.io/fix-message"
	// AnnotationHalted, on the halt's Lease, halts the rollout on every
	// node; its value says which node failed and why. Deleting it lifts
	// the halt:
	//
	//	kubectl -n sandboxpin annotate lease sandboxpin-fix sandboxpin.io/halted-
	AnnotationHalted = "sandboxpin.io/halted"
	// DefaultLease is the name of the first Lease of the [Lock], which
	// also holds the [Halt]; a Lock of concurrency N adds
	// DefaultLease-1 ... DefaultLease-(N-1).
	DefaultLease = "sandboxpin-fix"
)

// State is a node's state in the rollout, as [AnnotationState] and the
// metrics carry it. It is an open set: a state a newer sandboxpin writes
// decodes, and [State.Known] tells.
type State string

// The states.
const (
	StateNone       State = "none"       // nothing to change
	StatePending    State = "pending"    // a plan, mode plan: nothing written
	StateWaiting    State = "waiting"    // a plan, waiting for the lock
	StateBlocked    State = "blocked"    // holding the lock, a gate closed
	StateApplying   State = "applying"   // writing the edits
	StateRestarting State = "restarting" // restarting the units
	StateChecking   State = "checking"   // waiting for the runtime, the kubelet, the audit
	StateDone       State = "done"       // fixed and checked
	StateFailed     State = "failed"     // the fix failed; restored; the rollout halted
	StateHalted     State = "halted"     // a plan, the rollout halted by another node
	StateByHand     State = "by-hand"    // steps no edit answers: for a person
)

// Known reports whether s is one of this version's states.
func (s State) Known() bool {
	switch s {
	case StateNone, StatePending, StateWaiting, StateBlocked, StateApplying, StateRestarting,
		StateChecking, StateDone, StateFailed, StateHalted, StateByHand:
		return true
	}
	return false
}

// ErrHalted is returned while the rollout is halted.
var ErrHalted = errors.New("rollout: halted")

// Window is a daily time window, [Start, End) in Location; End before
// Start spans midnight. The zero Window is always open.
type Window struct {
	Start, End time.Duration // since midnight
	Location   *time.Location
}

// ParseWindow parses "HH:MM-HH:MM" in loc ("" is the zero Window).
func ParseWindow(s string, loc *time.Location) (Window, error) {
	return Window{}, errors.New("unimplemented")
}

// Contains reports whether t is inside w.
func (w Window) Contains(t time.Time) bool { return true }

// Gates are what must hold before a node writes.
type Gates struct {
	Client kubernetes.Interface
	// Node is the Node that must be Ready.
	Node string
	// Prometheus is the base URL of the Prometheus API ("" skips the
	// check); an alert firing whose name matches Blocking and not Ignore
	// closes the gate. HTTP nil is http.DefaultClient.
	Prometheus string
	Blocking   *regexp.Regexp
	Ignore     *regexp.Regexp
	HTTP       *http.Client
	Window     Window
	// Now nil is time.Now.
	Now func() time.Time
}

// Check returns "" when every gate is open, else why one is closed (for
// people: "alert KubeNodeNotReady firing", "node not Ready", "outside the
// window 02:00-05:00"). An error is a gate it could not check, which
// counts as closed.
func (g Gates) Check(ctx context.Context) (string, error) {
	return "", errors.New("unimplemented")
}

// Status is what a node publishes.
type Status struct {
	State   State
	Plan    string // the plan's summary, "" for none
	Digest  string // "sha256:HEX", "" for none
	Message string
}

// Publisher publishes a node's Status on its Node: the annotations (a merge
// patch of the sandboxpin.io/fix-* keys only) and, when the state changes,
// an Event on the Node (reason "SandboxpinFix" + the state in CamelCase,
// type Warning for failed and halted).
type Publisher struct {
	Client kubernetes.Interface
	Node   string
	// Component is the Events' source ("sandboxpin-rollout").
	Component string
	// Now nil is time.Now.
	Now func() time.Time
}

// Publish publishes s; it writes nothing when s equals what the Node
// carries.
func (p *Publisher) Publish(ctx context.Context, s Status) error {
	return errors.New("unimplemented")
}
