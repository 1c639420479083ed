// Package unitfile reads the little of systemd's unit file syntax that the
// tests of deploy/systemd need: sections, keys and values (continuation
// lines included), and the words of an Exec line.
//
//	u, err := unitfile.Parse(data)
//	words, err := unitfile.Words(u.Get("Service", "ExecStart"))
//
// It follows systemd.syntax(7) and systemd.service(5) ("Command lines") with
// these differences: specifiers (%n) and environment variables ($X) are
// kept as written, and the escapes inside quotes are limited to \" \' \\.
// A [Unit] is immutable once parsed and safe for concurrent use.
package unitfile
