package rollout

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const testNamespace = "sandboxpin"

// testDuration is short so that waits and renewals happen within a test;
// the Leases say 1s (whole seconds, rounded up).
const testDuration = 300 * time.Millisecond

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// lease is a Lease in testNamespace held by holder, renewed ago, of
// durationSeconds, with transitions.
func lease(name, holder string, ago time.Duration, durationSeconds, transitions int32) *coordinationv1.Lease {
	renew := metav1.NewMicroTime(time.Now().Add(-ago))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, LeaseDurationSeconds: &durationSeconds,
			AcquireTime: &renew, RenewTime: &renew, LeaseTransitions: &transitions,
		},
	}
}

func getLease(t *testing.T, c *fake.Clientset, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

func TestLockAcquire(t *testing.T) {
	t.Parallel()
	noRenew := lease("sandboxpin-fix", "node-b", 0, 30, 0)
	noRenew.Spec.RenewTime = nil
	tests := []struct {
		name        string
		existing    []runtime.Object // Leases before Acquire
		concurrency int
		wantLease   string // the Lease taken
		transitions int32  // its leaseTransitions after
	}{
		{name: "none: created", wantLease: "sandboxpin-fix"},
		{name: "free", existing: []runtime.Object{lease("sandboxpin-fix", "", time.Minute, 1, 4)}, wantLease: "sandboxpin-fix", transitions: 5},
		{name: "expired", existing: []runtime.Object{lease("sandboxpin-fix", "node-b", 31*time.Second, 30, 2)}, wantLease: "sandboxpin-fix", transitions: 3},
		{name: "held, no renew time", existing: []runtime.Object{noRenew}, wantLease: "sandboxpin-fix", transitions: 1},
		{name: "own, after a restart", existing: []runtime.Object{lease("sandboxpin-fix", "node-a", time.Second, 30, 7)}, wantLease: "sandboxpin-fix", transitions: 7},
		{
			name:        "second of two",
			existing:    []runtime.Object{lease("sandboxpin-fix", "node-b", time.Second, 30, 0)},
			concurrency: 2, wantLease: "sandboxpin-fix-1",
		},
		{
			name:        "own before free, after a restart",
			existing:    []runtime.Object{lease("sandboxpin-fix", "", time.Minute, 1, 3), lease("sandboxpin-fix-1", "node-a", time.Second, 30, 5)},
			concurrency: 2, wantLease: "sandboxpin-fix-1", transitions: 5,
		},
		{
			name:        "own before missing",
			existing:    []runtime.Object{lease("sandboxpin-fix-2", "node-a", time.Second, 30, 1)},
			concurrency: 3, wantLease: "sandboxpin-fix-2", transitions: 1,
		},
		{
			name:        "third of three, second expired",
			existing:    []runtime.Object{lease("sandboxpin-fix", "node-b", 0, 30, 0), lease("sandboxpin-fix-1", "node-c", time.Hour, 30, 1)},
			concurrency: 3, wantLease: "sandboxpin-fix-1", transitions: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset(tt.existing...)
			l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Concurrency: tt.concurrency, Duration: testDuration}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			held, release, err := l.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, held.Err())

			got := getLease(t, c, tt.wantLease)
			assert.Equal(t, "node-a", deref(got.Spec.HolderIdentity))
			assert.Equal(t, int32(1), deref(got.Spec.LeaseDurationSeconds))
			assert.Equal(t, tt.transitions, deref(got.Spec.LeaseTransitions))
			assert.WithinDuration(t, time.Now(), got.Spec.RenewTime.Time, 2*time.Second)
			assert.NotNil(t, got.Spec.AcquireTime)

			require.NoError(t, release(ctx))
			require.NoError(t, release(ctx), "a second release")
			assert.ErrorIs(t, context.Cause(held), ErrReleased)
			got = getLease(t, c, tt.wantLease)
			assert.Empty(t, deref(got.Spec.HolderIdentity))
			assert.Equal(t, tt.transitions, deref(got.Spec.LeaseTransitions))
		})
	}
}

// TestLockConcurrency takes every Lease and then waits: the next node gets
// one only when a holder releases it.
func TestLockConcurrency(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock := func(id string) *Lock {
		return &Lock{Client: c, Namespace: testNamespace, Identity: id, Concurrency: 2, Duration: testDuration}
	}
	_, releaseA, err := lock("node-a").Acquire(ctx)
	require.NoError(t, err)
	_, releaseB, err := lock("node-b").Acquire(ctx)
	require.NoError(t, err)

	short, cancelShort := context.WithTimeout(ctx, 2*testDuration)
	defer cancelShort()
	_, _, err = lock("node-c").Acquire(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "both Leases are held")

	acquired := make(chan error, 1)
	go func() {
		_, _, err := lock("node-c").Acquire(ctx)
		acquired <- err
	}()
	time.Sleep(2 * testDuration) // renewed meanwhile: not expired
	select {
	case err := <-acquired:
		t.Fatalf("Acquire returned %v while both Leases were held", err)
	default:
	}
	require.NoError(t, releaseB(ctx))
	require.NoError(t, <-acquired)
	assert.Equal(t, "node-c", deref(getLease(t, c, "sandboxpin-fix-1").Spec.HolderIdentity))
	assert.Equal(t, "node-a", deref(getLease(t, c, "sandboxpin-fix").Spec.HolderIdentity))
	require.NoError(t, releaseA(ctx))
}

// TestLockConflict has the API server answer the first updates of a free
// Lease with a conflict, as it does when another node updated it first:
// Acquire reads it again and takes it.
func TestLockConflict(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset(lease("sandboxpin-fix", "", time.Minute, 1, 0))
	var conflicts atomic.Int32
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) <= 2 {
			return true, nil, apierrors.NewConflict(leaseResource, "sandboxpin-fix", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Duration: testDuration}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, release, err := l.Acquire(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, conflicts.Load(), int32(3))
	assert.Equal(t, "node-a", deref(getLease(t, c, "sandboxpin-fix").Spec.HolderIdentity))
	require.NoError(t, release(ctx))
}

// TestLockCreateRace has another node create the Lease first.
func TestLockCreateRace(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(leaseResource, "sandboxpin-fix")
	})
	l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Duration: testDuration}
	ctx, cancel := context.WithTimeout(context.Background(), 2*testDuration)
	defer cancel()
	_, _, err := l.Acquire(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestLockAcquireErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lock     Lock
		apiErr   error            // every Lease request's answer, nil for none
		want     error            // errors.Is, nil for none
		wantFunc func(error) bool // and this, nil for none
		timeout  time.Duration    // ctx's, 0 for 5s
		existing []runtime.Object // Leases
	}{
		{name: "no identity", lock: Lock{}, want: errNoIdentity},
		{
			name: "forbidden", lock: Lock{Identity: "node-a"},
			apiErr:   apierrors.NewForbidden(leaseResource, "sandboxpin-fix", errors.New("RBAC")),
			wantFunc: apierrors.IsForbidden,
		},
		{
			name: "server unavailable: retried until ctx ends", lock: Lock{Identity: "node-a"},
			apiErr: apierrors.NewServiceUnavailable("down"), timeout: 2 * testDuration,
			want: context.DeadlineExceeded, wantFunc: apierrors.IsServiceUnavailable,
		},
		{
			name: "held: waits until ctx ends", lock: Lock{Identity: "node-a"},
			existing: []runtime.Object{lease("sandboxpin-fix", "node-b", 0, 30, 0)},
			timeout:  2 * testDuration, want: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset(tt.existing...)
			if tt.apiErr != nil {
				c.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.apiErr
				})
			}
			l := tt.lock
			l.Client, l.Namespace, l.Duration = c, testNamespace, testDuration
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			held, release, err := l.Acquire(ctx)
			require.Error(t, err)
			assert.Nil(t, held)
			assert.Nil(t, release)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			}
			if tt.wantFunc != nil {
				assert.True(t, tt.wantFunc(err), "error %v", err)
			}
		})
	}
}

// TestLockLost: the held context ends with ErrLost when another holder
// takes the Lease, when it is deleted, or when renewing keeps failing.
func TestLockLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// lose makes the Lease lost, after it was acquired; down makes
		// every update fail from then on.
		lose func(t *testing.T, c *fake.Clientset, down *atomic.Bool)
	}{
		{name: "taken", lose: func(t *testing.T, c *fake.Clientset, _ *atomic.Bool) {
			l := getLease(t, c, "sandboxpin-fix")
			l.Spec.HolderIdentity = ptr("node-b")
			_, err := c.CoordinationV1().Leases(testNamespace).Update(context.Background(), l, metav1.UpdateOptions{})
			require.NoError(t, err)
		}},
		{name: "deleted", lose: func(t *testing.T, c *fake.Clientset, _ *atomic.Bool) {
			require.NoError(t, c.CoordinationV1().Leases(testNamespace).Delete(context.Background(), "sandboxpin-fix", metav1.DeleteOptions{}))
		}},
		{name: "renew fails", lose: func(_ *testing.T, _ *fake.Clientset, down *atomic.Bool) { down.Store(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset()
			var down atomic.Bool
			c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				if down.Load() {
					return true, nil, apierrors.NewServiceUnavailable("down")
				}
				return false, nil, nil
			})
			l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Duration: testDuration}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			held, release, err := l.Acquire(ctx)
			require.NoError(t, err)
			time.Sleep(testDuration / 2) // renewed once
			require.NoError(t, held.Err())
			tt.lose(t, c, &down)
			select {
			case <-held.Done():
			case <-time.After(3 * testDuration):
				t.Fatal("the held context did not end")
			}
			assert.ErrorIs(t, context.Cause(held), ErrLost)
			err = release(context.Background())
			if down.Load() {
				assert.True(t, apierrors.IsServiceUnavailable(err), "release: %v", err)
			} else {
				require.NoError(t, err)
			}
			if tt.name == "taken" {
				assert.Equal(t, "node-b", deref(getLease(t, c, "sandboxpin-fix").Spec.HolderIdentity), "release left another's Lease alone")
			}
		})
	}
}

// TestLockRenews: the holder keeps the Lease past its duration.
func TestLockRenews(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Duration: testDuration}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held, release, err := l.Acquire(ctx)
	require.NoError(t, err)
	first := getLease(t, c, "sandboxpin-fix").Spec.RenewTime.Time
	time.Sleep(3 * testDuration)
	got := getLease(t, c, "sandboxpin-fix")
	assert.True(t, got.Spec.RenewTime.After(first), "renewTime %v not after %v", got.Spec.RenewTime, first)
	assert.Equal(t, first, got.Spec.AcquireTime.Time, "acquireTime kept")
	require.NoError(t, held.Err())
	require.NoError(t, release(ctx))
}

func TestHalt(t *testing.T) {
	t.Parallel()
	held := lease("sandboxpin-fix", "node-b", 0, 30, 3)
	halted := lease("sandboxpin-fix", "", 0, 1, 3)
	halted.Annotations = map[string]string{AnnotationHalted: "node-c: restore failed", "other": "kept"}
	tests := []struct {
		name     string
		existing []runtime.Object // the Lease before
		conflict bool             // the first update answers a conflict
		reason   string           // Set's
		want     string           // Get's after Set
		holder   string           // the Lease's holderIdentity after
	}{
		{name: "no lease: created", reason: "node-a: audit unprotected", want: "node-a: audit unprotected"},
		{name: "held lease: holder kept", existing: []runtime.Object{held}, reason: "node-a: x", want: "node-a: x", holder: "node-b"},
		{name: "already halted: first reason kept", existing: []runtime.Object{halted}, reason: "node-a: x", want: "node-c: restore failed"},
		{name: "conflict: retried", existing: []runtime.Object{held}, conflict: true, reason: "node-a: x", want: "node-a: x", holder: "node-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset(tt.existing...)
			if tt.conflict {
				var once atomic.Bool
				c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					if once.CompareAndSwap(false, true) {
						return true, nil, apierrors.NewConflict(leaseResource, "sandboxpin-fix", errors.New("modified"))
					}
					return false, nil, nil
				})
			}
			h := Halt{Client: c, Namespace: testNamespace}
			ctx := context.Background()
			before, err := h.Get(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Set(ctx, tt.reason))
			got, err := h.Get(ctx)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			l := getLease(t, c, DefaultLease)
			assert.Equal(t, tt.holder, deref(l.Spec.HolderIdentity))
			if before != "" {
				assert.Equal(t, "kept", l.Annotations["other"])
			}
		})
	}
}

func TestHaltErrors(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(leaseResource, "stop", errors.New("RBAC"))
	})
	h := Halt{Client: c, Namespace: testNamespace, Name: "stop"}
	_, err := h.Get(context.Background())
	assert.True(t, apierrors.IsForbidden(err), "Get: %v", err)
	assert.ErrorContains(t, err, "sandboxpin/stop")
	err = h.Set(context.Background(), "x")
	assert.True(t, apierrors.IsForbidden(err), "Set: %v", err)
	assert.ErrorIs(t, h.Set(context.Background(), ""), errNoReason)
}

// TestHaltAndLock: a halt set on a held Lease survives the holder's
// renewals and release, and the Lock takes a Lease the halt created.
func TestHaltAndLock(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := Halt{Client: c, Namespace: testNamespace}
	require.NoError(t, h.Set(ctx, "node-b: failed"))
	l := &Lock{Client: c, Namespace: testNamespace, Identity: "node-a", Duration: testDuration}
	_, release, err := l.Acquire(ctx)
	require.NoError(t, err)
	time.Sleep(testDuration)
	require.NoError(t, release(ctx))
	got, err := h.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "node-b: failed", got)
	assert.Equal(t, int32(1), deref(getLease(t, c, DefaultLease).Spec.LeaseTransitions))
}
