// Package unitfile reads systemd unit files: their logical lines
// (continuations joined), their sections and assignments, and the words of
// a command line such as ExecStart. resolve reads cri-dockerd's unit with
// it; the tests of deploy/systemd read the shipped units with it.
//
//	u, err := unitfile.Parse(data)
//	words, err := unitfile.Words(u.Get("Service", "ExecStart"))
//
// It follows systemd's own parsers, read in systemd's source: config_parse
// and parse_line in src/shared/conf-parser.c (two versions, v244's with
// CONFIG_PARSE_REFUSE_BOM and a later one with bom_seen and
// config_parse_permyriad, agree on all below); extract_first_word in
// src/basic/extract-word.c as config_parse_exec in
// src/core/load-fragment.c calls it (EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE,
// retried with EXTRACT_CUNESCAPE_RELAX); cunescape_one in
// src/basic/escape.c. Not re-read at a current tag.
//
//   - A line ending in an odd number of backslashes goes on in the next
//     line; that backslash becomes a space and the next line is appended
//     as written, leading whitespace included. A continuation left open at
//     the end of the file is a line of its own.
//   - Lines whose first non-blank character is # or ; are comments, inside
//     a continuation too.
//   - A section header must end in ]; anything else starting with [ is an
//     error, as systemd refuses such a file. A line without =, one with an
//     empty key and an assignment outside a section are skipped, as
//     systemd skips them with a warning.
//   - In a command line, whitespace separates words; single and double
//     quotes group, may start or end within a word ("a"b is ab) and must
//     be closed; a backslash escapes, inside either quote too: \a \b \f \n
//     \r \t \v \\ \" \' and \s (a space) are read as C does, and any other
//     escape is kept as written, backslash included, as systemd keeps it
//     (with a warning).
//
// Not done: specifiers (%n), environment variables ($X), the \x, \u and
// octal escapes (kept as written) and ";" between commands.
package unitfile
