// Package resolve tells which sandbox ("pause") image a Kubernetes node's
// container runtime really uses, from every source that names one, with
// provenance, conflicts, the pins to protect it and a pre-pull list.
package resolve
