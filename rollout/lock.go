package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/util/retry"
)

// The causes of a held context's end ([context.Cause]).
var (
	// ErrLost: the Lease was taken by another holder or deleted, or it
	// could not be renewed in time.
	ErrLost = errors.New("rollout: lease lost")
	// ErrReleased: release was called.
	ErrReleased = errors.New("rollout: lease released")
)

// errNoIdentity is Acquire's error for a Lock without an Identity.
var errNoIdentity = errors.New("rollout: lock without an identity")

// Lock is the cluster-wide lock: Concurrency Leases in Namespace (Name,
// Name-1, ...), each held by at most one node at a time.
//
// A Lease is free when its holderIdentity is "" or it expired: its
// renewTime plus leaseDurationSeconds is past by this node's clock (the
// nodes' clocks are taken to agree to well within Duration). A holder that
// finds a Lease already held under its own Identity (it restarted) takes it
// again. Taking or renewing a Lease is an update with the resourceVersion
// read, so of two nodes racing for one Lease one wins and the other sees a
// conflict and waits on. This is what client-go's leaderelection does with
// one Lease (tools/leaderelection/leaderelection.go@v0.37.2:
// tryAcquireOrRenew and release), except that expiry is judged by the
// Lease's renewTime rather than by when this process last saw it change.
type Lock struct {
	Client    kubernetes.Interface
	Namespace string
	// Name is the first Lease's name; "" is [DefaultLease].
	Name string
	// Identity is the holder's identity (the node's name).
	Identity string
	// Concurrency is how many nodes may hold a Lease at once; 0 is 1.
	Concurrency int
	// Duration is the Leases' duration; the holder renews at a third of
	// it. 0 is 30s.
	Duration time.Duration
}

func (l *Lock) leases() coordinationclient.LeaseInterface {
	return l.Client.CoordinationV1().Leases(l.Namespace)
}

func (l *Lock) duration() time.Duration {
	if l.Duration <= 0 {
		return 30 * time.Second
	}
	return l.Duration
}

// leaseName returns the i-th Lease's name: Name, Name-1, Name-2, ...
func (l *Lock) leaseName(i int) string {
	name := l.Name
	if name == "" {
		name = DefaultLease
	}
	if i == 0 {
		return name
	}
	return name + "-" + strconv.Itoa(i)
}

// Acquire blocks until it holds one of the Leases (or ctx ends), and keeps
// renewing it. The returned context ends when the Lease is lost or
// released; release gives it up (holderIdentity cleared) and is safe to
// call more than once. When ctx ends, the held context ends too and
// renewing stops, but the Lease stays held until release or its expiry.
//
// While it waits, it reads the Leases again every Duration/3 to 2/3
// (jittered, so that waiting nodes spread their requests). A conflict or
// an error with no answer from the API server (a timeout, throttling, a
// connection refused) is retried; any other answer (forbidden, invalid) is
// returned. The held context ends, with cause [ErrLost], when the Lease is
// taken by another holder or deleted, or when renewing has failed for
// 2/3 of Duration: before other nodes may see the Lease expire.
func (l *Lock) Acquire(ctx context.Context) (held context.Context, release func(context.Context) error, err error) {
	if l.Identity == "" {
		return nil, nil, errNoIdentity
	}
	var last error // the last error retried, for the error when ctx ends
	for {
		name, err := l.take(ctx)
		switch {
		case name != "":
			held, release := l.hold(ctx, name)
			return held, release, nil
		case err == nil, apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			// All held by other nodes, or another node was faster.
		case retriable(err):
			last = err
		default:
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return nil, nil, fmt.Errorf("rollout: waiting for lease %s/%s: %w (last error: %w)", l.Namespace, l.leaseName(0), context.Cause(ctx), last)
			}
			return nil, nil, fmt.Errorf("rollout: waiting for lease %s/%s: %w", l.Namespace, l.leaseName(0), context.Cause(ctx))
		case <-time.After(wait.Jitter(l.duration()/3, 1)):
		}
	}
}

// retriable reports whether err is one the API server did not answer
// with a verdict on the request: a timeout, throttling, a server error,
// or no answer at all (the connection failed).
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}

// take reads every Lease and takes one: the one this holder already has
// (it restarted), else the first free, expired or missing one (created).
// It returns the Lease's name, or "" with a nil error when other holders
// have them all.
func (l *Lock) take(ctx context.Context) (string, error) {
	now := metav1.NowMicro()
	var pick *coordinationv1.Lease // nil with name set: create it
	name := ""
	for i := range max(l.Concurrency, 1) {
		n := l.leaseName(i)
		lease, err := l.leases().Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if name == "" {
				name = n
			}
			continue
		}
		if err != nil {
			return "", wrapLease(l.Namespace, n, err)
		}
		holder := deref(lease.Spec.HolderIdentity)
		if holder == l.Identity {
			pick, name = lease, n
			break
		}
		if name == "" && (holder == "" || expired(&lease.Spec, now.Time)) {
			pick, name = lease, n
		}
	}
	switch {
	case name == "":
		return "", nil
	case pick == nil:
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace}}
		l.setHolder(&lease.Spec, now, true)
		_, err := l.leases().Create(ctx, lease, metav1.CreateOptions{})
		return taken(name, wrapLease(l.Namespace, name, err))
	}
	// As leaderelection's tryAcquireOrRenew does: a new holder counts a
	// transition and its own acquireTime; the same holder keeps both.
	again := deref(pick.Spec.HolderIdentity) == l.Identity
	if !again {
		pick.Spec.LeaseTransitions = ptr(deref(pick.Spec.LeaseTransitions) + 1)
	}
	l.setHolder(&pick.Spec, now, !again)
	_, err := l.leases().Update(ctx, pick, metav1.UpdateOptions{})
	return taken(name, wrapLease(l.Namespace, name, err))
}

// taken returns name when err is nil, else "" and err.
func taken(name string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return name, nil
}

// setHolder makes spec this holder's, renewed at now.
func (l *Lock) setHolder(spec *coordinationv1.LeaseSpec, now metav1.MicroTime, acquired bool) {
	spec.HolderIdentity = ptr(l.Identity)
	spec.LeaseDurationSeconds = ptr(int32(min(math.Ceil(l.duration().Seconds()), math.MaxInt32)))
	spec.RenewTime = &now
	if acquired || spec.AcquireTime == nil {
		spec.AcquireTime = &now
	}
}

// expired reports whether the Lease spec's renewTime plus its duration is
// past at now.
func expired(spec *coordinationv1.LeaseSpec, now time.Time) bool {
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return true
	}
	return !now.Before(spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second))
}

// hold renews the Lease name until the returned context ends, and returns
// the release function.
func (l *Lock) hold(ctx context.Context, name string) (context.Context, func(context.Context) error) {
	held, cancel := context.WithCancelCause(ctx)
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		l.renew(held, cancel, name)
	}()
	var once sync.Once
	var err error
	return held, func(ctx context.Context) error {
		once.Do(func() {
			cancel(ErrReleased)
			<-renewing // no renew may follow the release
			err = l.release(ctx, name)
		})
		return err
	}
}

// renew renews the Lease name every Duration/3 (after a failure, every
// Duration/9) until ctx ends, and cancels ctx when the Lease is lost.
func (l *Lock) renew(ctx context.Context, cancel context.CancelCauseFunc, name string) {
	d := l.duration()
	last := time.Now() // the last successful renew
	timer := time.NewTimer(d / 3)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		err := l.renewOnce(ctx, name)
		switch {
		case err == nil:
			last = start
			timer.Reset(d / 3)
		case errors.Is(err, ErrLost):
			cancel(err)
			return
		case time.Since(last) >= d*2/3:
			cancel(fmt.Errorf("%w: not renewed for %s: %w", ErrLost, time.Since(last).Round(time.Millisecond), err))
			return
		default:
			timer.Reset(d / 9)
		}
	}
}

// renewOnce moves the Lease name's renewTime to now, or returns ErrLost
// when it is no longer this holder's.
func (l *Lock) renewOnce(ctx context.Context, name string) error {
	lease, err := l.leases().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: lease %s/%s deleted", ErrLost, l.Namespace, name)
	}
	if err != nil {
		return wrapLease(l.Namespace, name, err)
	}
	if holder := deref(lease.Spec.HolderIdentity); holder != l.Identity {
		return fmt.Errorf("%w: lease %s/%s is held by %q", ErrLost, l.Namespace, name, holder)
	}
	l.setHolder(&lease.Spec, metav1.NowMicro(), false)
	_, err = l.leases().Update(ctx, lease, metav1.UpdateOptions{})
	return wrapLease(l.Namespace, name, err)
}

// release clears the Lease name's holderIdentity if this holder still has
// it, with a duration of 1s as leaderelection's release does.
func (l *Lock) release(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := l.leases().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrapLease(l.Namespace, name, err)
		}
		if deref(lease.Spec.HolderIdentity) != l.Identity {
			return nil
		}
		now := metav1.NowMicro()
		lease.Spec.HolderIdentity = ptr("")
		lease.Spec.LeaseDurationSeconds = ptr(int32(1))
		lease.Spec.RenewTime = &now
		_, err = l.leases().Update(ctx, lease, metav1.UpdateOptions{})
		return wrapLease(l.Namespace, name, err)
	})
}

// Halt is the rollout's halt: [AnnotationHalted] on the Lease Name in
// Namespace. The Lease is also the [Lock]'s first: both update it with
// the resourceVersion read, so neither undoes the other's change.
type Halt struct {
	Client    kubernetes.Interface
	Namespace string
	// Name is the Lease's; "" is [DefaultLease].
	Name string
}

// errNoReason is Set's error for an empty reason, which would read as no
// halt.
var errNoReason = errors.New("rollout: a halt needs a reason")

func (h Halt) name() string {
	if h.Name == "" {
		return DefaultLease
	}
	return h.Name
}

// Get returns the halt's reason, "" when the rollout is not halted.
func (h Halt) Get(ctx context.Context) (string, error) {
	lease, err := h.Client.CoordinationV1().Leases(h.Namespace).Get(ctx, h.name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", wrapLease(h.Namespace, h.name(), err)
	}
	return lease.Annotations[AnnotationHalted], nil
}

// Set halts the rollout with reason, creating the Lease when it does not
// exist. A halt already set is kept (the first failure's reason).
func (h Halt) Set(ctx context.Context, reason string) error {
	if reason == "" {
		return errNoReason
	}
	leases := h.Client.CoordinationV1().Leases(h.Namespace)
	again := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return retry.OnError(retry.DefaultRetry, again, func() error {
		lease, err := leases.Get(ctx, h.name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
				Name: h.name(), Namespace: h.Namespace, Annotations: map[string]string{AnnotationHalted: reason},
			}}
			_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
			return wrapLease(h.Namespace, h.name(), err)
		}
		if err != nil {
			return wrapLease(h.Namespace, h.name(), err)
		}
		if lease.Annotations[AnnotationHalted] != "" {
			return nil
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[AnnotationHalted] = reason
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return wrapLease(h.Namespace, h.name(), err)
	})
}

// wrapLease names the Lease in err; nil stays nil.
func wrapLease(namespace, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("rollout: lease %s/%s: %w", namespace, name, err)
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
