package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// maxValueBytes caps each annotation value and Event message published:
// a plan summary or a message for people fits in far less, and the Node's
// annotations together must stay under 256 KiB (apimachinery's
// TotalAnnotationSizeLimitB).
const maxValueBytes = 1024

// errNoState is Publish's error for a Status without a State.
var errNoState = errors.New("rollout: status without a state")

// Publisher publishes a node's Status on its Node: the annotations (a merge
// patch of the sandboxpin.io/fix-* keys only) and, when the state changes,
// an Event on the Node (reason "SandboxpinFix" + the state in CamelCase,
// type Warning for failed, halted and blocked, else Normal). Values longer
// than 1 KiB are cut, ending in "…". A key missing on the Node reads as "".
//
// The Event is a core/v1 Event in namespace "default" about the Node
// (kind Node, its name and UID), as client-go's recorder makes one for an
// object without a namespace (tools/record/event.go@v0.37.2 makeEvent);
// `kubectl describe node` lists it (k8s.io/kubectl
// pkg/describe/describe.go@v0.37.2 searches the Node's UID and name).
type Publisher struct {
	Client kubernetes.Interface
	Node   string
	// Component is the Events' source ("sandboxpin-rollout"); "" is
	// "sandboxpin-rollout".
	Component string
	// Now nil is time.Now.
	Now func() time.Time
}

// Publish publishes s; it writes nothing when s equals what the Node
// carries. AnnotationSince is set when the state changes (or is missing).
// The Event follows the annotations: when creating it fails, Publish
// returns the error and the annotations stay published.
func (p *Publisher) Publish(ctx context.Context, s Status) error {
	if s.State == "" {
		return errNoState
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	nodes := p.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, p.Node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("rollout: node %s: %w", p.Node, err)
	}
	have := node.Annotations
	want := map[string]string{
		AnnotationState:   capValue(string(s.State)),
		AnnotationPlan:    capValue(s.Plan),
		AnnotationDigest:  capValue(s.Digest),
		AnnotationMessage: capValue(s.Message),
	}
	changed := have[AnnotationState] != want[AnnotationState]
	if changed || have[AnnotationSince] == "" {
		want[AnnotationSince] = now.UTC().Format(time.RFC3339)
	}
	patch := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			patch[k] = v
		}
	}
	if len(patch) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return fmt.Errorf("rollout: node %s: %w", p.Node, err)
	}
	if _, err := nodes.Patch(ctx, p.Node, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("rollout: node %s: annotations: %w", p.Node, err)
	}
	if !changed {
		return nil
	}
	if _, err := p.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, p.event(node, s, now), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("rollout: node %s: event: %w", p.Node, err)
	}
	return nil
}

// event returns the Event of node's change to s.State.
func (p *Publisher) event(node *corev1.Node, s Status, now time.Time) *corev1.Event {
	component := p.Component
	if component == "" {
		component = "sandboxpin-rollout"
	}
	typ := corev1.EventTypeNormal
	switch s.State {
	case StateFailed, StateHalted, StateBlocked:
		typ = corev1.EventTypeWarning
	}
	message := s.Message
	if message == "" {
		message = "sandboxpin fix: " + string(s.State)
	}
	t := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// As client-go's recorder names Events (tools/record/util/util.go@v0.37.2
			// GenerateEventName): unique per object and nanosecond.
			Name:      fmt.Sprintf("%s.%x", node.Name, now.UnixNano()),
			Namespace: metav1.NamespaceDefault,
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID},
		Reason:         "SandboxpinFix" + camelCase(string(s.State)),
		Message:        capValue(message),
		Source:         corev1.EventSource{Component: component, Host: node.Name},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
		Type:           typ,
	}
}

// camelCase returns s's words (split at '-', '_' and ' ') each with its
// first letter upper case, joined: "by-hand" is "ByHand".
func camelCase(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		r, n := utf8.DecodeRuneInString(w)
		b.WriteString(strings.ToUpper(string(r)))
		b.WriteString(w[n:])
	}
	return b.String()
}

// capValue cuts s to at most maxValueBytes bytes, at a rune boundary,
// ending in "…" when it was cut.
func capValue(s string) string {
	if len(s) <= maxValueBytes {
		return s
	}
	n := maxValueBytes - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
