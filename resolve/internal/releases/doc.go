// Package releases holds the facts about other projects' releases that
// resolve needs, as data: one [Row] per fact with its value, its version
// [Range] and where it was read (an upstream file at a tag, or the live
// test that shows it).
//
// [DefaultImage] gives a runtime's or the kubelet's built-in sandbox image,
// [KubeadmPauseImage] kubeadm's pause image, and each [Fact] tells where a
// pinning behaviour holds and the note users read about it. [EndOfLife]
// gives the last day a containerd minor is supported, and
// [KubernetesSupported] whether a Kubernetes minor still is. Nothing here
// reads a node; all is safe for concurrent use.
package releases
