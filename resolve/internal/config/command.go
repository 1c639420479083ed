package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/unitfile"
)

// maxEnvFiles bounds the EnvironmentFile= lines of a unit and its drop-ins
// together; a unit names one or two.
const maxEnvFiles = 64

// Command is the command line systemd runs for a unit: the last
// ExecStart= of the unit and its drop-ins, with the unit's environment
// expanded into it, each argument with the place it is written.
type Command struct {
	Unit      string   // "crio.service"
	Files     []string // unit file, drop-ins, then environment files, as read
	ExecStart *Found   // the ExecStart= that runs (Value the whole line); nil when none
	Args      []Found  // the arguments, program first; see ReadCommand for where each is written
	Env       map[string]Found
	Notes     []string
}

// ReadCommand reads the command line systemd runs for unit: the unit file
// (the first found in systemdUnitDirs) and its unit.d/*.conf drop-ins, in
// systemd's order (see unitFiles). In [Service], an empty ExecStart=
// clears the commands before it and the last ExecStart= runs;
// Environment= assignments apply in order, and EnvironmentFile= names
// files (a leading "-": the file may be missing; an empty value clears
// the list) whose assignments override Environment= and each other in
// the order named (systemd.exec(5), "EnvironmentFile="). It returns nil,
// nil when no unit file exists.
//
// The environment is expanded as systemd's replace_env_argv does
// (src/basic/env-util.c, read at systemd e86708b83e30): a word that is
// exactly $NAME becomes the words of NAME's value, split at blanks with
// quotes honoured (none when NAME is unset); ${NAME} inside a word is
// replaced by the value as it is, and $$ is one $. Each argument's Found
// says where it is written: the ExecStart= line that holds it (Key
// "ExecStart"), or, for an argument that comes from a variable, the line
// that assigns the variable (Key its name), whether an Environment= or an
// environment file. Specifiers (%n) are not expanded.
func ReadCommand(fsys fs.FS, unit string) (*Command, error) {
	files, err := unitFiles(fsys, unit)
	if err != nil || files == nil {
		return nil, err
	}
	c := &Command{Unit: unit, Env: map[string]Found{}}
	var execs []execStart
	var envFiles []Found
	seen := 0
	for _, name := range files {
		b, err := nodefs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		p := nodefs.NodePath(name)
		c.Files = append(c.Files, p)
		if execs, err = parseExecStarts(p, b, execs, &seen); err != nil {
			return nil, err
		}
		if err := parseEnvironment(p, b, c.Env); err != nil {
			return nil, err
		}
		if envFiles, err = parseEnvFileLines(p, b, envFiles); err != nil {
			return nil, err
		}
	}
	if err := c.readEnvFiles(fsys, envFiles); err != nil {
		return nil, err
	}
	if len(execs) == 0 {
		return c, nil
	}
	if len(execs) > 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("%s: %d ExecStart= lines without a reset (an empty ExecStart=); "+
			"systemd refuses that for a Type=simple service; the last one was read", execs[len(execs)-1].at.Path, len(execs)))
	}
	last := execs[len(execs)-1]
	c.ExecStart = &last.at
	for _, w := range last.args {
		at := Found{Value: w.Text, Path: last.at.Path, Line: last.e.LineAt(w.Off), Key: "ExecStart"}
		if err := c.expand(at); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseEnvFileLines appends the EnvironmentFile= values of the [Service]
// section of one unit file to files; an empty one clears the list.
func parseEnvFileLines(p string, b []byte, files []Found) ([]Found, error) {
	for e, err := range unitfile.Entries(b) {
		if err != nil {
			return nil, nodefs.Invalid(p, "", e.Line, err)
		}
		if e.Section != "Service" || e.Key != "EnvironmentFile" {
			continue
		}
		if e.Value == "" {
			files = files[:0]
			continue
		}
		if len(files) == maxEnvFiles {
			return nil, nodefs.Invalid(p, "EnvironmentFile", e.Line, fmt.Errorf("%w: more than %d EnvironmentFile= lines", nodefs.ErrLimit, maxEnvFiles))
		}
		files = append(files, Found{Value: e.Value, Path: p, Line: e.Line, Key: "EnvironmentFile"})
	}
	return files, nil
}

// readEnvFiles reads the environment files named, in order, into c.Env.
func (c *Command) readEnvFiles(fsys fs.FS, files []Found) error {
	for _, f := range files {
		name, optional := strings.CutPrefix(f.Value, "-")
		if !strings.HasPrefix(name, "/") || strings.ContainsAny(name, "*?[%") {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: EnvironmentFile=%s is not an absolute path without wildcards or specifiers: it was not read",
				f.Origin(), f.Value))
			continue
		}
		fsName, ok := nodefs.FSPath(name)
		if !ok || fsName == "." {
			continue
		}
		b, err := nodefs.ReadFile(fsys, fsName)
		if err != nil {
			return err
		}
		if b == nil {
			if !optional {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: EnvironmentFile=%s does not exist: systemd does not start %s without it", f.Origin(), name, c.Unit))
			}
			continue
		}
		p := nodefs.NodePath(fsName)
		c.Files = append(c.Files, p)
		vars, err := parseEnvFile(p, b)
		if err != nil {
			return err
		}
		if len(c.Env)+len(vars) > maxEnvVariables {
			return nodefs.Invalid(p, "", 0, fmt.Errorf("%w: more than %d environment variables", nodefs.ErrLimit, maxEnvVariables))
		}
		maps.Copy(c.Env, vars)
	}
	return nil
}

// expand appends the arguments that the ExecStart word at gives.
func (c *Command) expand(at Found) error {
	w := at.Value
	if name, ok := strings.CutPrefix(w, "$"); ok && name != "" && name[0] != '{' && name[0] != '$' {
		if !validEnvName(name) {
			return c.add(at)
		}
		v, ok := c.Env[name]
		if !ok {
			return nil
		}
		words, err := unitfile.Split(v.Value, maxCommandWords)
		if errors.Is(err, unitfile.ErrTooManyWords) {
			err = errTooManyWords
		}
		if err != nil {
			return nodefs.Invalid(v.Path, name, v.Line, err)
		}
		for _, s := range words {
			a := v
			a.Value = s.Text
			if err := c.add(a); err != nil {
				return err
			}
		}
		return nil
	}
	if !strings.Contains(w, "$") {
		return c.add(at)
	}
	// ${NAME} within a word, $$ as $, anything else as written.
	var sb strings.Builder
	src := at
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 == len(w) {
			sb.WriteByte(w[i])
			continue
		}
		switch w[i+1] {
		case '$':
			sb.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(w[i+2:], '}')
			if end < 0 || !validEnvName(w[i+2:i+2+end]) {
				sb.WriteByte('$')
				continue
			}
			name := w[i+2 : i+2+end]
			if v, ok := c.Env[name]; ok {
				sb.WriteString(v.Value)
				src = v
			} else {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: ${%s} is not set in %s's environment: systemd passes it as an empty string",
					at.Origin(), name, c.Unit))
			}
			i += 2 + end
		default:
			sb.WriteByte('$')
		}
	}
	src.Value = sb.String()
	return c.add(src)
}

// add appends one argument, within maxCommandWords.
func (c *Command) add(a Found) error {
	if len(c.Args) == maxCommandWords {
		return nodefs.Invalid(a.Path, a.Key, a.Line, errTooManyWords)
	}
	c.Args = append(c.Args, a)
	return nil
}

// Flag returns the value of the last of the flags names (each as
// written: "--config", "-c") on the command line; nil when none is given.
// See [Command.Flags].
func (c *Command) Flag(names ...string) *Found {
	all := c.Flags(names...)
	if len(all) == 0 {
		return nil
	}
	return &all[len(all)-1]
}

// Flags returns the value of every one of the flags names on the command
// line before a "--", as "--name=value" or "--name value", in order. The
// Flag of each is the name as given when the flag is written where its
// value is (the same ExecStart=, or the same variable), "" when the value
// comes from elsewhere ("--pause-image $IMAGE": the line assigning IMAGE).
func (c *Command) Flags(names ...string) []Found {
	if c == nil {
		return nil
	}
	var out []Found
	for i := 1; i < len(c.Args); i++ {
		a := c.Args[i]
		if a.Value == "--" {
			break
		}
		for _, n := range names {
			if v, ok := strings.CutPrefix(a.Value, n+"="); ok {
				a.Value, a.Flag = v, n
				out = append(out, a)
				break
			}
			if a.Value == n && i+1 < len(c.Args) {
				f := c.Args[i+1]
				if f.Path == a.Path && f.Key == a.Key {
					f.Flag = n
				}
				out = append(out, f)
				i++
				break
			}
		}
	}
	return out
}

// Lookup returns the variable name of the unit's environment, with where
// it is assigned; nil when it is not set.
func (c *Command) Lookup(name string) *Found {
	if c == nil {
		return nil
	}
	v, ok := c.Env[name]
	if !ok {
		return nil
	}
	return &v
}
