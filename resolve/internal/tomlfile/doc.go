// Package tomlfile decodes a runtime's TOML config with that runtime's own
// decoder, behind a cheap pre-scan for limits, and says on which line each
// key is written.
//
//	doc, err := tomlfile.Parse(b, tomlfile.GoTOML, tomlfile.MaxEntries)
//	image, ok, err := doc.String("plugins", "io.containerd.grpc.v1.cri", "sandbox_image")
//	line := doc.Line("plugins", "io.containerd.grpc.v1.cri", "sandbox_image")
//
// # Verdicts
//
// A file the runtime's decoder refuses is refused, with the decoder's line
// (for go-toml's errors without a position, the line of the first
// expression after which a prefix of the file no longer decodes); a file
// it accepts is accepted, unless it passes a limit. The two decoders
// differ: BurntSushi/toml (CRI-O) lets a dotted key or a header add to an
// inline table or to a table defined otherwise, which go-toml (containerd
// 2.x) refuses. containerd 1.x reads its config with go-toml v1
// (github.com/pelletier/go-toml v1.9.5 at v1.7.30), which is not modelled:
// its files are judged by go-toml v2.
//
// # Limits
//
// The pre-scan lexes the file as TOML does (strings and comments skipped)
// and refuses, with [nodefs.ErrLimit] and a line, more than [MaxDepth]
// brackets and key parts open at once, and more than [MaxEntries] tables
// and keys: the decoders recurse once per level, and go-toml's decoder
// takes time quadratic in the number of tables and keys.
//
// # Lines
//
// The same pass records the line of every key path written outside arrays:
// [header]s, keys under them, dotted keys, keys of inline tables. A key
// inside an array (an array of inline tables) has the line of the key that
// holds the array.
package tomlfile
