package rollout_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sandboxpin/sandboxpin/rollout"
)

func ExampleParseWindow() {
	w, err := rollout.ParseWindow("22:00-04:00", time.UTC)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, clock := range []string{"21:59", "23:30", "03:59", "04:00"} {
		t, _ := time.Parse("15:04", clock)
		fmt.Println(clock, w.Contains(t))
	}
	_, err = rollout.ParseWindow("22:00-24:00", time.UTC)
	fmt.Println(err)
	// Output:
	// 21:59 false
	// 23:30 true
	// 03:59 true
	// 04:00 false
	// rollout: invalid window "22:00-24:00": end: "24:00" is not HH:MM (00:00 to 23:59)
}

func ExampleGates_Check() {
	// A Node whose kubelet stopped posting status (the API server's
	// client here is a fake).
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}
	client := fake.NewClientset(node)

	night, _ := rollout.ParseWindow("02:00-05:00", time.UTC)
	g := rollout.Gates{Client: client, Node: "node-a", Window: night}
	for _, now := range []time.Time{
		time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC),
	} {
		g.Now = func() time.Time { return now }
		reason, err := g.Check(context.Background())
		fmt.Printf("%s: %q %v\n", now.Format("15:04"), reason, err)
	}
	// Output:
	// 12:00: "outside the window 02:00-05:00" <nil>
	// 03:00: "node not Ready (NodeStatusUnknown)" <nil>
}
