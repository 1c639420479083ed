package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestPublish(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	waiting := Status{State: StateWaiting, Plan: "edit /etc/containerd/config.toml; restart containerd", Digest: "sha256:ab"}
	tests := []struct {
		name        string
		before      map[string]string // the Node's annotations
		status      Status            // published at t1
		patched     bool              // a patch was sent
		want        map[string]string // the Node's annotations after
		eventType   string            // the Event's type, "" for no Event
		reason      string            // its reason
		wantMessage string            // its message
	}{
		{
			name:   "first",
			before: map[string]string{"other": "kept"},
			status: waiting, patched: true,
			want: map[string]string{
				"other": "kept", AnnotationState: "waiting", AnnotationPlan: waiting.Plan, AnnotationDigest: "sha256:ab",
				AnnotationSince: "2026-12-07T02:01:00Z",
			},
			eventType: corev1.EventTypeNormal, reason: "SandboxpinFixWaiting", wantMessage: "sandboxpin fix: waiting",
		},
		{
			name: "same: nothing written",
			before: map[string]string{
				AnnotationState: "waiting", AnnotationPlan: waiting.Plan, AnnotationDigest: "sha256:ab", AnnotationSince: "2026-12-07T02:00:00Z",
			},
			status: waiting,
			want: map[string]string{
				AnnotationState: "waiting", AnnotationPlan: waiting.Plan, AnnotationDigest: "sha256:ab", AnnotationSince: "2026-12-07T02:00:00Z",
			},
		},
		{
			name: "same state, new message: since kept, no event",
			before: map[string]string{
				AnnotationState: "blocked", AnnotationMessage: "alert A firing", AnnotationSince: "2026-12-07T02:00:00Z",
			},
			status: Status{State: StateBlocked, Message: "alert B firing"}, patched: true,
			want: map[string]string{
				AnnotationState: "blocked", AnnotationMessage: "alert B firing", AnnotationSince: "2026-12-07T02:00:00Z",
			},
		},
		{
			name: "same state, since missing: set",
			before: map[string]string{
				AnnotationState: "done",
			},
			status: Status{State: StateDone}, patched: true,
			want: map[string]string{AnnotationState: "done", AnnotationSince: "2026-12-07T02:01:00Z"},
		},
		{
			name: "new state: since moves, plan cleared",
			before: map[string]string{
				AnnotationState: "checking", AnnotationPlan: waiting.Plan, AnnotationDigest: "sha256:ab", AnnotationSince: "2026-12-07T02:00:00Z",
			},
			status: Status{State: StateFailed, Message: "the audit says unprotected; restored; rollout halted"}, patched: true,
			want: map[string]string{
				AnnotationState: "failed", AnnotationPlan: "", AnnotationDigest: "", AnnotationSince: "2026-12-07T02:01:00Z",
				AnnotationMessage: "the audit says unprotected; restored; rollout halted",
			},
			eventType: corev1.EventTypeWarning, reason: "SandboxpinFixFailed", wantMessage: "the audit says unprotected; restored; rollout halted",
		},
		{
			name:   "by-hand: CamelCase",
			before: map[string]string{AnnotationState: "none", AnnotationSince: "2026-12-07T02:00:00Z"},
			status: Status{State: StateByHand, Message: "upgrade containerd"}, patched: true,
			want: map[string]string{
				AnnotationState: "by-hand", AnnotationSince: "2026-12-07T02:01:00Z", AnnotationMessage: "upgrade containerd",
			},
			eventType: corev1.EventTypeNormal, reason: "SandboxpinFixByHand", wantMessage: "upgrade containerd",
		},
		{
			name: "blocked: Warning", status: Status{State: StateBlocked, Message: "node not Ready"}, patched: true,
			want:      map[string]string{AnnotationState: "blocked", AnnotationSince: "2026-12-07T02:01:00Z", AnnotationMessage: "node not Ready"},
			eventType: corev1.EventTypeWarning, reason: "SandboxpinFixBlocked", wantMessage: "node not Ready",
		},
		{
			name: "halted: Warning", status: Status{State: StateHalted, Message: "node-b: failed"}, patched: true,
			want:      map[string]string{AnnotationState: "halted", AnnotationSince: "2026-12-07T02:01:00Z", AnnotationMessage: "node-b: failed"},
			eventType: corev1.EventTypeWarning, reason: "SandboxpinFixHalted", wantMessage: "node-b: failed",
		},
		{
			name: "a newer state", status: Status{State: "rolling-back"}, patched: true,
			want:      map[string]string{AnnotationState: "rolling-back", AnnotationSince: "2026-12-07T02:01:00Z"},
			eventType: corev1.EventTypeNormal, reason: "SandboxpinFixRollingBack", wantMessage: "sandboxpin fix: rolling-back",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "0b5d", Annotations: tt.before}}
			c := fake.NewClientset(n)
			p := &Publisher{Client: c, Node: "node-a", Component: "sandboxpin-rollout", Now: func() time.Time { return t1 }}
			require.NoError(t, p.Publish(context.Background(), tt.status))

			got, err := c.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Annotations)
			var patches int
			for _, a := range c.Actions() {
				if a.GetVerb() == "patch" {
					patches++
					assert.Equal(t, "node-a", a.(k8stesting.PatchAction).GetName())
				}
			}
			assert.Equal(t, tt.patched, patches == 1, "patches: %d", patches)

			events, err := c.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			if tt.eventType == "" {
				assert.Empty(t, events.Items)
				return
			}
			require.Len(t, events.Items, 1)
			e := events.Items[0]
			assert.Equal(t, corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-a", UID: "0b5d"}, e.InvolvedObject)
			assert.Equal(t, tt.eventType, e.Type)
			assert.Equal(t, tt.reason, e.Reason)
			assert.Equal(t, tt.wantMessage, e.Message)
			assert.Equal(t, corev1.EventSource{Component: "sandboxpin-rollout", Host: "node-a"}, e.Source)
			assert.Equal(t, t1, e.FirstTimestamp.UTC())
			assert.Equal(t, int32(1), e.Count)
			assert.True(t, strings.HasPrefix(e.Name, "node-a."), e.Name)
		})
	}
}

// TestPublishCap: long values are cut to 1 KiB at a rune boundary.
func TestPublishCap(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	p := &Publisher{Client: c, Node: "node-a"}
	long := "x" + strings.Repeat("é", 1000) // 2001 bytes: a cut at 1021 would split an é
	require.NoError(t, p.Publish(context.Background(), Status{State: StateFailed, Plan: long, Message: long}))
	n, err := c.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	for _, k := range []string{AnnotationPlan, AnnotationMessage} {
		v := n.Annotations[k]
		assert.LessOrEqual(t, len(v), maxValueBytes, k)
		assert.Greater(t, len(v), maxValueBytes-4, k)
		assert.True(t, utf8.ValidString(v), k)
		assert.True(t, strings.HasSuffix(v, "é…"), k)
	}
	events, err := c.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	assert.Equal(t, n.Annotations[AnnotationMessage], events.Items[0].Message)
	assert.Equal(t, "sandboxpin-rollout", events.Items[0].Source.Component, "the default")

	// Published again, the cut values equal the Node's: nothing written.
	before := len(c.Actions())
	require.NoError(t, p.Publish(context.Background(), Status{State: StateFailed, Plan: long, Message: long}))
	assert.Len(t, c.Actions(), before+1, "a get only")
}

func TestPublishErrors(t *testing.T) {
	t.Parallel()
	eventsResource := schema.GroupResource{Resource: "events"}
	tests := []struct {
		name    string
		verb    string // the request that fails, "" for none
		node    bool   // the Node exists
		status  Status
		want    error            // errors.Is, nil for none
		check   func(error) bool // or this
		wantHas string           // in the error
	}{
		{name: "no state", node: true, want: errNoState},
		{name: "no node", status: Status{State: StateDone}, check: apierrors.IsNotFound, wantHas: "node-a"},
		{name: "patch forbidden", verb: "patch", node: true, status: Status{State: StateDone}, check: apierrors.IsForbidden, wantHas: "node node-a: annotations"},
		{name: "event forbidden", verb: "create", node: true, status: Status{State: StateDone}, check: apierrors.IsForbidden, wantHas: "node node-a: event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset()
			if tt.node {
				c = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
			}
			if tt.verb != "" {
				c.PrependReactor(tt.verb, "*", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(eventsResource, "x", errors.New("RBAC"))
				})
			}
			p := &Publisher{Client: c, Node: "node-a"}
			err := p.Publish(context.Background(), tt.status)
			require.Error(t, err)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			}
			if tt.check != nil {
				assert.True(t, tt.check(err), "error %v", err)
			}
			assert.ErrorContains(t, err, tt.wantHas)
		})
	}
}

func TestCamelCase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"none": "None", "by-hand": "ByHand", "rolling_back": "RollingBack", "": "", "-a--b-": "AB", "élan": "Élan",
	} {
		assert.Equal(t, want, camelCase(in), "camelCase(%q)", in)
	}
}
