// Package remedy turns a node's verdict into its remedy, and writes it.
//
// [For] plans, from a [resolve.Result] (and the [audit.Verdict], when the
// runtime's images are known), the file edits and the steps that answer
// each fix: the sandbox image at the key the node's runtime reads for its
// version and config version, in the files its command line names
// ([resolve.Result.RuntimeCommand]: containerd's sandbox_image in version
// 1 and 2 files, pinned_images.sandbox in version 3 and 4, a key the
// version ignores moved there, in the file --config names; CRI-O's
// --pause-image where it is written, else its pause_image where the last
// drop-in sets it, else in a new drop-in that sorts last in its
// --config-dir; cri-dockerd's --pod-infra-container-image where its unit's
// environment file states it, else through a drop-in of
// /etc/systemd/system, never the package's unit; k3s's and RKE2's
// pause-image where their command line or config files state it); a value
// not written there as it is used (quoted, escaped) is a step for a person
// that names its file and line; --pod-infra-container-image removed from the
// kubelet's kubeadm-flags.env, its unit drop-ins' Environment= and
// ExecStart=, and kubeadm's nodeRegistration.kubeletExtraArgs. Each edit
// changes only the bytes of its value or line: comments, order, quoting,
// indentation and line endings (CRLF too) stay. A change of the configured
// sandbox image comes with the step that stores the image under the new
// name before the runtime restarts (a pull through CRI, or on a node that
// cannot pull a tag of the stored image), since the runtime looks its
// sandbox image up by the name as configured. Restarts are steps, never
// taken: the operator's tooling owns them. What no edit can answer (an
// upgrade, the shim, a file that k3s or RKE2 write anew at every start),
// and a value the text editor cannot change byte-exactly (a YAML flow map
// or alias, an escaped or multi-line string), is a step for a person.
//
// [Verify] resolves the edited node in memory and refuses a plan whose
// edits leave a finding they answer, or bring a new one. [Apply] writes
// the plan under the root's confinement, every edit or none, each file
// atomically (a process killed at any instant leaves each file whole-old
// or whole-new), with its mode and owner, keeping the originals under
// [DefaultBackupDir]; a file that changed since it was planned, or changes
// while it is written, is refused. [Sweep] removes what a killed run left.
// [Restore] undoes a written plan from its backups, file by file, where
// no other writer changed the file since.
//
// The package is pure: it asks no socket. sandboxpin fix is its command;
// sandboxpin rollout writes, and restores, a plan over a cluster.
package remedy
