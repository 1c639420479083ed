package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
	"github.com/sandboxpin/sandboxpin/rollout"
)

// fakeRestarter stands in for systemd: it records the units and brings
// them back (after), or fails.
type fakeRestarter struct {
	mu       sync.Mutex
	restarts [][]string
	err      error
	after    func(units []string) // the units coming back
}

// testCluster is client-go's fake clientset, with the Leases of the
// rollout's Lock and Halt in namespace sandboxpin.
type testCluster struct{ *fake.Clientset }

func newTestCluster() testCluster { return testCluster{fake.NewClientset()} }

func (c testCluster) lock(node string) *rollout.Lock {
	return &rollout.Lock{Client: c, Namespace: "sandboxpin", Identity: node, Duration: 600 * time.Millisecond}
}

func (c testCluster) halt() rollout.Halt { return rollout.Halt{Client: c, Namespace: "sandboxpin"} }

// holder is the first Lease's holder now.
func (c testCluster) holder(t *testing.T) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("sandboxpin").Get(context.Background(), rollout.DefaultLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	return ptrOr(l.Spec.HolderIdentity)
}

// holders are the holders the Leases were given, in order (each time a
// node took one).
func (c testCluster) holders() []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource != "leases" || (a.GetVerb() != "create" && a.GetVerb() != "update") {
			continue
		}
		l, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease)
		if !ok {
			continue
		}
		h := ptrOr(l.Spec.HolderIdentity)
		if h != "" && (len(out) == 0 || out[len(out)-1] != h) {
			out = append(out, h)
		}
	}
	return out
}

func ptrOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nodeView reads what a node published: its annotations and the Events
// about it, in the order they were made.
type nodeView struct {
	c    testCluster
	name string
}

// states are the states of the Events about the node, in order.
func (v nodeView) states() []rollout.State {
	var out []rollout.State
	for _, a := range v.c.Actions() {
		if a.GetResource().Resource != "events" || a.GetVerb() != "create" {
			continue
		}
		e, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.Event)
		if ok && e.InvolvedObject.Name == v.name {
			out = append(out, rollout.State(strings.ToLower(strings.TrimPrefix(e.Reason, "SandboxpinFix"))))
		}
	}
	return out
}

// last is the Status the node's annotations carry.
func (v nodeView) last() rollout.Status {
	node, err := v.c.CoreV1().Nodes().Get(context.Background(), v.name, metav1.GetOptions{})
	if err != nil {
		return rollout.Status{}
	}
	a := node.Annotations
	return rollout.Status{State: rollout.State(a[rollout.AnnotationState]), Plan: a[rollout.AnnotationPlan],
		Digest: a[rollout.AnnotationDigest], Message: a[rollout.AnnotationMessage]}
}

func (r *fakeRestarter) Restart(_ context.Context, units ...string) error {
	r.mu.Lock()
	r.restarts = append(r.restarts, units)
	r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.after != nil {
		r.after(units)
	}
	return nil
}

// rolloutNode is one node of a rollout test: its tree, its runtime, its
// Node, and its fixer.
type rolloutNode struct {
	root      string
	orig      map[string]string
	rt        *fakecri.Runtime
	cluster   testCluster
	pub       nodeView
	restarter *fakeRestarter
	fx        *fixer
}

// kubeletDropinNode is the kubelet-flag-dropin sample: kubelet 1.35 with
// --pod-infra-container-image in a drop-in and kubeadm's config, its
// containerd 2.4.2 storing and pinning the sandbox image. The plan edits
// both files and restarts kubelet.service.
func newRolloutNode(t *testing.T, c testCluster, name, sample string, write bool, images ...*runtimeapi.Image) *rolloutNode {
	t.Helper()
	rn := &rolloutNode{root: copyNode(t, filepath.Join(sampleNodes, sample)), pub: nodeView{c, name}}
	rn.orig = nodeFiles(t, rn.root)
	rn.rt = &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.4.2", Images: images}
	n := &nodeFlags{root: rn.root, endpoint: "unix://" + fakecri.Serve(t, rn.rt)}
	if sample == "kubelet-flag-dropin" {
		n.kubeletVersion, n.kubeadmConfig = "1.35.0", "/etc/kubernetes/kubeadm.yaml"
	}
	switch sample {
	case "containerd-1.7-alias":
		rn.rt.RuntimeVersion = "v1.7.20"
	case "containerd-1.6-debian-dpkg":
		rn.rt.RuntimeVersion = "v1.6.20"
	}
	rn.cluster = c
	_, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The kubelet comes back: its Node's heartbeat after the restart.
	rn.restarter = &fakeRestarter{after: func(units []string) {
		assert.Equal(t, name, c.holder(t), "a restart without the lock")
		for _, u := range units {
			if u != "kubelet.service" {
				continue
			}
			node, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if assert.NoError(t, err) {
				node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now().Add(2 * time.Second).Truncate(time.Second))
				_, err = c.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
				assert.NoError(t, err)
			}
		}
	}}
	fx := newFixer(n, name, write, slog.New(slog.NewTextHandler(io.Discard, nil)))
	fx.client, fx.halt, fx.lock, fx.restarter = c, c.halt(), c.lock(name), rn.restarter
	fx.publisher = &rollout.Publisher{Client: c, Node: name}
	fx.gates = rollout.Gates{Client: c, Node: name}
	fx.liftHalt = "kubectl -n sandboxpin annotate lease sandboxpin-fix sandboxpin.io/halted-"
	fx.checkTimeout, fx.poll = time.Minute, 10*time.Millisecond // a loaded machine is slow
	rn.fx = fx
	return rn
}

// pausePinned is the sandbox image of kubelet-flag-dropin, stored and
// pinned by its runtime.
func pausePinned() *runtimeapi.Image {
	return &runtimeapi.Image{Id: "sha256:" + hexID, RepoTags: []string{"registry.k8s.io/pause:3.10.2"}, Pinned: true}
}

func TestRolloutPlanMode(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", false, pausePinned())
	require.NoError(t, rn.fx.pass(t.Context()))
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, rn.orig, nodeFiles(t, rn.root), "plan mode wrote")
	assert.Equal(t, []rollout.State{rollout.StatePending}, rn.pub.states())
	s := rn.pub.last()
	assert.Equal(t, "edit /etc/systemd/system/kubelet.service.d/20-sandbox.conf, /etc/kubernetes/kubeadm.yaml; then restart kubelet.service", s.Plan)
	assert.Regexp(t, "^sha256:[0-9a-f]{64}$", s.Digest)
	assert.Empty(t, c.holders())
	assert.Empty(t, rn.restarter.restarts)
	m := rn.fx.metrics
	assert.InDelta(t, 1, testutil.ToFloat64(m.pending), 0)
	assert.InDelta(t, 1, testutil.ToFloat64(m.state.WithLabelValues("pending")), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(m.state.WithLabelValues("none")), 0)

	// The same plan on another node has the same digest.
	other := newRolloutNode(t, c, "node-b", "kubelet-flag-dropin", false, pausePinned())
	require.NoError(t, other.fx.pass(t.Context()))
	assert.Equal(t, s.Digest, other.pub.last().Digest)
}

// TestRolloutWrite: write mode on the kubelet-flag-dropin node, whose plan
// edits two files and restarts kubelet.service: done, or each way it goes
// wrong, which restores the originals (after the restart: restarts again),
// fails the node and halts the rollout, or (a closed gate) writes nothing.
func TestRolloutWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		setup        func(*testing.T, *rolloutNode) // what goes wrong
		wantStates   []rollout.State                // the Events, in order
		wantRestarts [][]string                     // the units restarted, each time
		written      bool                           // the edits stay on the node
		wantMessage  string                         // in the last status's message
		wantHalt     string                         // the halt's reason starts with it; "" for no halt
	}{
		{name: "done", written: true,
			setup:        func(_ *testing.T, rn *rolloutNode) { rn.fx.checkTimeout = time.Minute }, // a loaded machine
			wantStates:   []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting, rollout.StateChecking, rollout.StateDone},
			wantRestarts: [][]string{{"kubelet.service"}},
			wantMessage:  "written and checked: edit /etc/systemd/system/kubelet.service.d/20-sandbox.conf"},
		{name: "the audit never says protected",
			setup: func(_ *testing.T, rn *rolloutNode) {
				rn.fx.runtimeUp = func(context.Context) error { return nil } // the audit alone fails
				rn.fx.audit = func(context.Context) nodeAudit {
					return nodeAudit{Err: errors.New("the runtime no longer pins registry.k8s.io/pause:3.10.2")}
				}
			},
			wantStates:   []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting, rollout.StateChecking, rollout.StateFailed},
			wantRestarts: [][]string{{"kubelet.service"}, {"kubelet.service"}},
			wantMessage:  "the audit: the runtime no longer pins registry.k8s.io/pause:3.10.2; the originals are restored and kubelet.service restarted",
			wantHalt:     "node node-a: not back within 2s: the audit: the runtime no longer pins"},
		{name: "the kubelet does not report",
			setup: func(_ *testing.T, rn *rolloutNode) {
				rn.restarter.after = nil
				rn.fx.runtimeUp = func(context.Context) error { return nil }
			},
			wantStates:   []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting, rollout.StateChecking, rollout.StateFailed},
			wantRestarts: [][]string{{"kubelet.service"}, {"kubelet.service"}},
			wantMessage:  "not back within 2s: the kubelet has not reported since its restart; the originals are restored",
			wantHalt:     "node node-a: not back within 2s: the kubelet has not reported"},
		{name: "the runtime does not answer",
			setup: func(_ *testing.T, rn *rolloutNode) {
				rn.fx.runtimeUp = func(context.Context) error { return errors.New("connection refused") }
			},
			wantStates:   []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting, rollout.StateChecking, rollout.StateFailed},
			wantRestarts: [][]string{{"kubelet.service"}, {"kubelet.service"}},
			wantMessage:  "the runtime does not answer: connection refused",
			wantHalt:     "node node-a: not back within 2s: the runtime does not answer"},
		{name: "the restart fails",
			setup:        func(_ *testing.T, rn *rolloutNode) { rn.restarter.err = errors.New("Job for kubelet.service failed") },
			wantStates:   []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting, rollout.StateFailed},
			wantRestarts: [][]string{{"kubelet.service"}, {"kubelet.service"}},
			wantMessage:  "restarting kubelet.service: Job for kubelet.service failed; the originals are restored",
			wantHalt:     "node node-a: restarting kubelet.service: Job for kubelet.service failed"},
		{name: "a file changed before the write",
			setup: func(t *testing.T, rn *rolloutNode) {
				plan, n := rn.fx.plan, 0
				rn.fx.plan = func(ctx context.Context) (*remedy.Plan, *cri.Client, error) {
					p, client, err := plan(ctx)
					if n++; n == 2 { // the plan made again under the lock
						appendToFile(t, filepath.Join(rn.root, "etc/kubernetes/kubeadm.yaml"), "# another writer\n")
						rn.orig["/etc/kubernetes/kubeadm.yaml"] += "# another writer\n"
					}
					return p, client, err
				}
			},
			wantStates:  []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateFailed},
			wantMessage: "writing the edits: write /etc/kubernetes/kubeadm.yaml: file changed since it was read",
			wantHalt:    "node node-a: writing the edits"},
		{name: "outside the window",
			setup: func(t *testing.T, rn *rolloutNode) {
				now := time.Now().UTC()
				w, err := rollout.ParseWindow(now.Add(2*time.Hour).Format("15:04")+"-"+now.Add(3*time.Hour).Format("15:04"), time.UTC)
				require.NoError(t, err)
				rn.fx.gates = rollout.Gates{Client: rn.cluster, Node: "node-a", Window: w}
			},
			wantStates:  []rollout.State{rollout.StateBlocked},
			wantMessage: "outside the window "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCluster()
			rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", true, pausePinned())
			rn.fx.checkTimeout = 2 * time.Second // each check but the last is quick: fakes
			if tt.setup != nil {
				tt.setup(t, rn)
			}
			require.NoError(t, rn.fx.pass(t.Context()))
			assert.Equal(t, tt.wantStates, rn.pub.states())
			assert.Equal(t, tt.wantRestarts, rn.restarter.restarts)
			s := rn.pub.last()
			assert.Contains(t, s.Message, tt.wantMessage)
			assert.Equal(t, "edit /etc/systemd/system/kubelet.service.d/20-sandbox.conf, /etc/kubernetes/kubeadm.yaml; then restart kubelet.service", s.Plan)
			after := withoutBackups(nodeFiles(t, rn.root))
			if tt.written {
				for _, p := range []string{"/etc/systemd/system/kubelet.service.d/20-sandbox.conf", "/etc/kubernetes/kubeadm.yaml"} {
					assert.NotContains(t, after[p], "pod-infra-container-image", p)
				}
			} else {
				assert.Equal(t, rn.orig, after, "the originals are not back")
			}
			reason, err := c.halt().Get(t.Context())
			require.NoError(t, err)
			if tt.wantHalt == "" {
				assert.Empty(t, reason)
			} else {
				assert.True(t, strings.HasPrefix(reason, tt.wantHalt), "halt %q, want %q...", reason, tt.wantHalt)
			}
			assert.Empty(t, c.holder(t), "the lock is released")
			m := rn.fx.metrics
			failed := s.State == rollout.StateFailed
			assert.InDelta(t, b2f(s.State == rollout.StateDone), testutil.ToFloat64(m.runs.WithLabelValues("done")), 0)
			assert.InDelta(t, b2f(failed), testutil.ToFloat64(m.runs.WithLabelValues("failed")), 0)
			assert.InDelta(t, b2f(failed), testutil.ToFloat64(m.halted), 0)
			assert.InDelta(t, 0, testutil.ToFloat64(m.lockHeld), 0)
			assert.InDelta(t, 1, testutil.ToFloat64(m.state.WithLabelValues(string(s.State))), 0)
			assert.InDelta(t, b2f(!tt.written), testutil.ToFloat64(m.pending), 0)

			if s.State == rollout.StateBlocked {
				assert.Empty(t, c.holders(), "blocked took the lock")
			}

			// The next pass: the state stays (no Event), nothing more
			// written or restarted.
			files := nodeFiles(t, rn.root)
			require.NoError(t, rn.fx.pass(t.Context()))
			assert.Equal(t, tt.wantStates, rn.pub.states())
			assert.Equal(t, files, nodeFiles(t, rn.root))
			assert.Len(t, rn.restarter.restarts, len(tt.wantRestarts))
		})
	}
}

// appendToFile appends line to the file at name.
func appendToFile(t *testing.T, name, line string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, errors.Join(err, f.Close()))
}

// TestRolloutHalted: once a node failed, the halt stops every other node
// before it writes or takes the lock, saying the reason and how to lift
// it; lifted, the rollout resumes.
func TestRolloutHalted(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", true, pausePinned())
	rn.fx.checkTimeout = 100 * time.Millisecond
	rn.restarter.err = errors.New("Job for kubelet.service failed")
	require.NoError(t, rn.fx.pass(t.Context()))
	require.Equal(t, rollout.StateFailed, rn.pub.last().State)
	reason, err := c.halt().Get(t.Context())
	require.NoError(t, err)

	other := newRolloutNode(t, c, "node-b", "kubelet-flag-dropin", true, pausePinned())
	require.NoError(t, other.fx.pass(t.Context()))
	assert.Equal(t, other.orig, nodeFiles(t, other.root))
	s := other.pub.last()
	assert.Equal(t, rollout.StateHalted, s.State)
	assert.Contains(t, s.Message, reason)
	assert.Contains(t, s.Message, "kubectl -n sandboxpin annotate lease sandboxpin-fix sandboxpin.io/halted-")
	assert.Equal(t, []string{"node-a"}, c.holders(), "node-b took the lock")
	assert.Empty(t, other.restarter.restarts)
	assert.InDelta(t, 1, testutil.ToFloat64(other.fx.metrics.halted), 0)

	// A person lifts the halt: node-b writes.
	lease, err := c.CoordinationV1().Leases("sandboxpin").Get(t.Context(), rollout.DefaultLease, metav1.GetOptions{})
	require.NoError(t, err)
	delete(lease.Annotations, rollout.AnnotationHalted)
	_, err = c.CoordinationV1().Leases("sandboxpin").Update(t.Context(), lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, other.fx.pass(t.Context()))
	assert.Equal(t, rollout.StateDone, other.pub.last().State)
	assert.InDelta(t, 0, testutil.ToFloat64(other.fx.metrics.halted), 0)
	assert.Equal(t, []string{"node-a", "node-b"}, c.holders())
}

// TestRolloutStopped: the pod stopped (its context ended) while it waits
// for the lock writes nothing and halts nothing; stopped during the write,
// it finishes it (done), within the grace period the DaemonSet gives.
func TestRolloutStopped(t *testing.T) {
	t.Parallel()
	t.Run("waiting", func(t *testing.T) {
		t.Parallel()
		c := newTestCluster()
		_, release, err := c.lock("node-x").Acquire(t.Context())
		require.NoError(t, err)
		defer func() { assert.NoError(t, release(context.Background())) }()
		rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", true, pausePinned())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { // the pod is stopped once the node waits
			assert.Eventually(t, func() bool { return rn.pub.last().State == rollout.StateWaiting }, time.Minute, 10*time.Millisecond)
			cancel()
		}()
		require.ErrorIs(t, rn.fx.pass(ctx), context.Canceled)
		assert.Equal(t, []rollout.State{rollout.StateWaiting}, rn.pub.states())
		assert.Equal(t, rn.orig, nodeFiles(t, rn.root))
		reason, err := c.halt().Get(t.Context())
		require.NoError(t, err)
		assert.Empty(t, reason)
	})
	t.Run("writing", func(t *testing.T) {
		t.Parallel()
		c := newTestCluster()
		rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", true, pausePinned())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		after := rn.restarter.after
		rn.restarter.after = func(units []string) {
			cancel() // SIGTERM, as the units restart
			after(units)
		}
		require.NoError(t, rn.fx.pass(ctx))
		assert.Equal(t, rollout.StateDone, rn.pub.last().State)
		assert.Equal(t, [][]string{{"kubelet.service"}}, rn.restarter.restarts)
		assert.Empty(t, c.holder(t), "the lock is released")
	})
}

// TestRolloutByHand: containerd 1.6.20 on Debian, whose plan is an upgrade,
// which is for a person: nothing is written, the lock not taken.
func TestRolloutByHand(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-b", "containerd-1.6-debian-dpkg", true,
		&runtimeapi.Image{Id: "sha256:" + hexID, RepoTags: []string{"registry.k8s.io/pause:3.6"}})
	require.NoError(t, rn.fx.pass(t.Context()))
	s := rn.pub.last()
	assert.Equal(t, rollout.StateByHand, s.State, "%+v", s)
	assert.Contains(t, s.Message, "steps for a person: 1. upgrade: no configuration can: containerd v1.6.20 never reports Image.pinned")
	assert.Equal(t, rn.orig, nodeFiles(t, rn.root))
	assert.Empty(t, c.holders())
	assert.InDelta(t, 1, testutil.ToFloat64(rn.fx.metrics.byHand), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(rn.fx.metrics.pending), 0)
}

// TestRolloutLabel: containerd 1.7 configured with the alias of the stored
// name: the plan edits the config, labels the configured name
// pinned (1.x does not relabel an image it stored before) and restarts
// containerd; the rollout takes each step, the label through containerd's
// images API before the restart, and ends done.
func TestRolloutLabel(t *testing.T) {
	t.Parallel()
	const name = "registry.k8s.io/pause:3.9"
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-b", "containerd-1.7-alias", true,
		&runtimeapi.Image{Id: "sha256:" + hexID, RepoTags: []string{name}})
	writeFile(t, filepath.Join(rn.root, "lib/systemd/system/containerd.service"), "[Service]\nExecStart=/usr/bin/containerd\n")
	labelled := &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v1.7.20",
		Images: []*runtimeapi.Image{{Id: "sha256:" + hexID, RepoTags: []string{name}, Pinned: true}}}
	labelledAt := "unix://" + fakecri.Serve(t, labelled)
	var (
		mu     sync.Mutex
		labels []string
	)
	rn.fx.labeller = func(_ context.Context, image string, l map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, rn.restarter.restarts, "labelled before the restart")
		labels = append(labels, image+" "+fmt.Sprint(l))
		return nil
	}
	rn.fx.audit = func(ctx context.Context) nodeAudit {
		n := *rn.fx.n
		mu.Lock()
		if len(labels) > 0 {
			n.endpoint = labelledAt // the runtime, once labelled
		}
		mu.Unlock()
		return auditNode(ctx, &n)
	}
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, []rollout.State{rollout.StateWaiting, rollout.StateApplying, rollout.StateRestarting,
		rollout.StateChecking, rollout.StateDone}, rn.pub.states(), "%+v", rn.pub.last())
	assert.Equal(t, []string{name + " map[io.cri-containerd.pinned:pinned]"}, labels)
	assert.Equal(t, [][]string{{"containerd.service"}}, rn.restarter.restarts)
	assert.Contains(t, nodeFiles(t, rn.root)["/etc/containerd/config.toml"], `sandbox_image = "registry.k8s.io/pause:3.9"`)

	// Stored only under the alias (an offline node): the pull is a tag of
	// the stored image, through containerd's images API, not a pull from
	// the registry; then the label and the restart.
	alias := newRolloutNode(t, newTestCluster(), "node-d", "containerd-1.7-alias", true,
		&runtimeapi.Image{Id: "sha256:" + hexID, RepoTags: []string{"k8s.gcr.io/pause:3.9"}})
	writeFile(t, filepath.Join(alias.root, "lib/systemd/system/containerd.service"), "[Service]\nExecStart=/usr/bin/containerd\n")
	var steps []string
	alias.fx.tagger = func(_ context.Context, from, image string) error {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, "tag "+from+" "+image)
		return nil
	}
	alias.fx.labeller = func(_ context.Context, image string, _ map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, "label "+image)
		return nil
	}
	alias.fx.audit = func(ctx context.Context) nodeAudit {
		n := *alias.fx.n
		n.endpoint = labelledAt
		return auditNode(ctx, &n)
	}
	require.NoError(t, alias.fx.pass(t.Context()))
	assert.Equal(t, rollout.StateDone, alias.pub.last().State, "%+v", alias.pub.last())
	assert.Equal(t, []string{"tag k8s.gcr.io/pause:3.9 " + name, "label k8s.gcr.io/pause:3.9", "label " + name}, steps,
		"the plan's steps in its order, the pulls first (its first label, of the stored name, is not an alternative here)")
	assert.Empty(t, alias.rt.Pulled(), "no pull from the registry")
	assert.Equal(t, [][]string{{"containerd.service"}}, alias.restarter.restarts)

	// A failed label fails the node: the originals restored, the
	// rollout halted, no restart.
	c2 := newTestCluster()
	failing := newRolloutNode(t, c2, "node-c", "containerd-1.7-alias", true,
		&runtimeapi.Image{Id: "sha256:" + hexID, RepoTags: []string{name}})
	writeFile(t, filepath.Join(failing.root, "lib/systemd/system/containerd.service"), "[Service]\nExecStart=/usr/bin/containerd\n")
	orig := nodeFiles(t, failing.root)
	failing.fx.labeller = func(context.Context, string, map[string]string) error {
		return errors.New("labelling registry.k8s.io/pause:3.9: unimplemented")
	}
	_ = failing.fx.pass(t.Context())
	assert.Equal(t, rollout.StateFailed, failing.pub.last().State)
	assert.Contains(t, failing.pub.last().Message, "unimplemented")
	assert.Equal(t, orig, withoutBackups(nodeFiles(t, failing.root)))
	assert.Empty(t, failing.restarter.restarts)
}

// TestRolloutTwoNodes: two nodes in write mode at once take the lock in
// turn (each restart happens while its node holds it) and both end done.
func TestRolloutTwoNodes(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	nodes := []*rolloutNode{
		newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", true, pausePinned()),
		newRolloutNode(t, c, "node-b", "kubelet-flag-dropin", true, pausePinned()),
	}
	var wg sync.WaitGroup
	for _, rn := range nodes {
		wg.Go(func() { assert.NoError(t, rn.fx.pass(t.Context())) })
	}
	wg.Wait()
	assert.ElementsMatch(t, []string{"node-a", "node-b"}, c.holders())
	for _, rn := range nodes {
		assert.Equal(t, rollout.StateDone, rn.pub.last().State)
		assert.Len(t, rn.restarter.restarts, 1)
	}
}

// TestRolloutLoop: the loop plans at once and every interval until its
// context ends, then returns nil; with once, one pass and its error.
func TestRolloutLoop(t *testing.T) {
	t.Parallel()
	rn := newRolloutNode(t, newTestCluster(), "node-a", "kubelet-flag-dropin", false, pausePinned())
	passes := 0
	plan := rn.fx.plan
	ctx, cancel := context.WithCancel(t.Context())
	rn.fx.plan = func(ctx context.Context) (*remedy.Plan, *cri.Client, error) {
		if passes++; passes == 3 {
			cancel()
		}
		return plan(ctx)
	}
	require.NoError(t, rn.fx.loop(ctx, time.Millisecond, false))
	assert.Equal(t, 3, passes)

	rn.fx.plan = func(context.Context) (*remedy.Plan, *cri.Client, error) { return nil, nil, errors.New("no runtime") }
	require.EqualError(t, rn.fx.loop(t.Context(), time.Hour, true), "no runtime")

	// No CRI socket: no plan is published (the node is judged live).
	rn.fx.plan = func(context.Context) (*remedy.Plan, *cri.Client, error) { return &remedy.Plan{}, nil, nil }
	require.ErrorIs(t, rn.fx.loop(t.Context(), time.Hour, true), errNoSocket)
}

func TestRolloutMetricsServe(t *testing.T) {
	t.Parallel()
	m := newFixMetrics()
	m.setState(rollout.StateWaiting)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stop := serveFixMetrics(t.Context(), ln, m.reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	body := get(t, "http://"+ln.Addr().String()+"/metrics")
	for _, want := range []string{
		"sandboxpin_fix_pending 0", "sandboxpin_fix_by_hand 0", `sandboxpin_fix_state{state="waiting"} 1`,
		`sandboxpin_fix_state{state="done"} 0`, "sandboxpin_fix_state_since_timestamp_seconds 0", "sandboxpin_fix_halted 0",
		"sandboxpin_fix_lock_held 0", `sandboxpin_fix_runs_total{outcome="done"} 0`, `sandboxpin_fix_runs_total{outcome="failed"} 0`,
	} {
		assert.Contains(t, body, want)
	}
	assert.Equal(t, "ok\n", get(t, "http://"+ln.Addr().String()+"/healthz"))
}

func get(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestRolloutFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "apply", "--node", "a"}, `--mode "apply": plan or write`},
		{[]string{"--node", ""}, "--node is empty"},
		{[]string{"--node", "a", "--blocking-alerts", "("}, "--blocking-alerts: error parsing regexp"},
		{[]string{"--node", "a", "--time-zone", "Mars/Olympus"}, "--time-zone: unknown time zone Mars/Olympus"},
		{[]string{"--node", "a", "--concurrency", "0"}, "--concurrency 0: at least 1"},
		{[]string{"--node", "a", "--interval", "0s"}, "must be positive"},
		{[]string{"--node", "a", "--kubeconfig", "/nonexistent/kubeconfig"}, "the cluster's config"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCmd(t, append([]string{"rollout"}, tt.args...)...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

// TestRolloutKubeletFromNode: without --kubelet-version the kubelet's
// version is the one its Node reports: 1.35 makes the flag an edit.
func TestRolloutKubeletFromNode(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-a", "kubelet-flag-dropin", false, pausePinned())
	rn.fx.n.kubeletVersion, rn.fx.kubeletFromNode = "", true
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, rollout.StateNone, rn.pub.last().State, "no version, no finding")

	node, err := c.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	node.Status.NodeInfo.KubeletVersion = "v1.35.0"
	_, err = c.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, rollout.StatePending, rn.pub.last().State)
	assert.Contains(t, rn.pub.last().Plan, "edit /etc/systemd/system/kubelet.service.d/20-sandbox.conf")
	assert.Equal(t, "v1.35.0", rn.fx.n.kubeletVersion)

	require.NoError(t, c.CoreV1().Nodes().Delete(t.Context(), "node-a", metav1.DeleteOptions{}))
	err = rn.fx.pass(t.Context())
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestRolloutPullOnly: a node whose configuration is right but whose
// sandbox image is absent: the plan is a pull, which the rollout takes
// through CRI, with no edit and no restart, then audits.
func TestRolloutPullOnly(t *testing.T) {
	t.Parallel()
	rn := newRolloutNode(t, newTestCluster(), "node-a", "kubelet-flag-dropin", true)
	rn.fx.n.kubeletVersion = "1.33.0"
	stored := &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.4.2", Images: []*runtimeapi.Image{pausePinned()}}
	storedAt := "unix://" + fakecri.Serve(t, stored)
	rn.fx.audit = func(ctx context.Context) nodeAudit {
		n := *rn.fx.n
		if len(rn.rt.Pulled()) > 0 {
			n.endpoint = storedAt // the runtime, once it pulled
		}
		return auditNode(ctx, &n)
	}
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, []rollout.State{rollout.StateWaiting, rollout.StateApplying,
		rollout.StateChecking, rollout.StateDone}, rn.pub.states(), "%+v", rn.pub.last())
	assert.Equal(t, "then pull registry.k8s.io/pause:3.10.2", rn.pub.last().Plan)
	assert.Equal(t, []string{"registry.k8s.io/pause:3.10.2"}, rn.rt.Pulled())
	assert.Empty(t, rn.restarter.restarts)
	assert.Equal(t, rn.orig, nodeFiles(t, rn.root))
}

func TestNodeUnit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files []string // the unit files on the node
		unit  string   // the plan's
		want  string   // the node's, "" for none
	}{
		{"the unit", []string{"lib/systemd/system/containerd.service"}, "containerd.service", "containerd.service"},
		{"a k3s server", []string{"etc/systemd/system/k3s.service"}, "k3s.service", "k3s.service"},
		{"a k3s agent", []string{"etc/systemd/system/k3s-agent.service"}, "k3s.service", "k3s-agent.service"},
		{"an RKE2 agent", []string{"usr/local/lib/systemd/system/rke2-agent.service"}, "rke2-server.service", "rke2-agent.service"},
		{"only a drop-in", []string{"etc/systemd/system/kubelet.service.d/10.conf"}, "kubelet.service", ""},
		{"none", nil, "crio.service", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tt.files {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("[Service]\n"), 0o600))
			}
			assert.Equal(t, tt.want, nodeUnit(resolve.DirFS(dir), tt.unit))
		})
	}
}

// TestRolloutNoUnit: a restart of a unit the node has no unit file for is
// a step for a person, known before anything is written (a restart that
// failed after the write would restore and halt the fleet); with the unit
// file, the same plan is one to roll out.
func TestRolloutNoUnit(t *testing.T) {
	t.Parallel()
	c := newTestCluster()
	rn := newRolloutNode(t, c, "node-a", "containerd-2.4-v4-ignored-v2-key", true, pausePinned())
	require.NoError(t, rn.fx.pass(t.Context()))
	s := rn.pub.last()
	assert.Equal(t, rollout.StateByHand, s.State)
	assert.Contains(t, s.Message, "nothing written: steps for a person: 1. restart: restart containerd.service: the node has no unit file for it")
	assert.Equal(t, rn.orig, nodeFiles(t, rn.root))
	assert.Empty(t, c.holders())

	unit := filepath.Join(rn.root, "lib/systemd/system/containerd.service")
	require.NoError(t, os.MkdirAll(filepath.Dir(unit), 0o750))
	require.NoError(t, os.WriteFile(unit, []byte("[Service]\nExecStart=/usr/bin/containerd\n"), 0o600))
	rn.fx.write = false
	require.NoError(t, rn.fx.pass(t.Context()))
	assert.Equal(t, rollout.StatePending, rn.pub.last().State, rn.pub.last().Message)
	assert.Contains(t, rn.pub.last().Plan, "edit /etc/containerd/config.toml; then restart containerd.service")
}

// withoutBackups returns files without those under the backup directory.
func withoutBackups(files map[string]string) map[string]string {
	for p := range files {
		if strings.HasPrefix(p, remedy.DefaultBackupDir+"/") {
			delete(files, p)
		}
	}
	return files
}

// TestRolloutCommand runs the command once in plan mode against an API
// server that refuses everything (a loopback stand-in, through
// --kubeconfig): the node is planned from its files and the live runtime,
// the refusal to publish is exit 2 naming the node, and nothing is
// written.
func TestRolloutCommand(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"nodes \"node-a\" is forbidden"}`)
	}))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+api.URL+
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"), 0o600))
	root := copyNode(t, filepath.Join(sampleNodes, "kubelet-flag-dropin"))
	orig := nodeFiles(t, root)
	rt := &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.4.2", Images: []*runtimeapi.Image{pausePinned()}}
	code, out, errOut := runCmd(t, "rollout", "--once", "--node", "node-a", "--kubeconfig", kubeconfig, "--metrics-listen", "127.0.0.1:0",
		"--root", root, "--runtime-endpoint", "unix://"+fakecri.Serve(t, rt), "--kubelet-version", "1.35.0", "--kubeadm-config", "/etc/kubernetes/kubeadm.yaml")
	assert.Equal(t, exitError, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "publishing pending on node node-a")
	assert.Contains(t, errOut, "forbidden")
	assert.Equal(t, orig, nodeFiles(t, root))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"GET /api/v1/nodes/node-a"}, asked)
}
