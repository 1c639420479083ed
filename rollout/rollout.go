package rollout

import "errors"

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

// Status is what a node publishes.
type Status struct {
	State   State
	Plan    string // the plan's summary, "" for none
	Digest  string // "sha256:HEX", "" for none
	Message string
}
