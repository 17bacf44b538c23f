// Package allowlist loads a project's allowlist and decides whether a
// write to a path is allowed.
//
// # Config file
//
// The config is read from .writewatch.yaml, found by looking in the working
// directory and then in each directory above it; the first one found wins.
// --config names a file instead, which must then exist. Without a config
// file only the built-in defaults and --allow entries apply.
//
// A config must be a regular file, or a symbolic link to one, of at most
// 16 MiB (MaxConfigSize). A FIFO, a device or a directory is refused before
// anything is read from it; --config /dev/null is the one exception, and
// reads as an empty config.
//
//	allow:              # paths or patterns that tests may write to
//	  - tests/**
//	  - ~/.cache/myapp
//	  - $HOME/.local/share/foo
//	  - {path: /srv/scratch, broad: true}
//	deny:               # deny wins over allow
//	  - .git
//	defaults:           # built-in entries; all on when omitted
//	  tmp: true
//	  dev: true
//	  go-cache: true
//	  python-cache: true
//
// Unknown keys, values of the wrong type, empty entries, bad patterns and
// undefined variables are errors, reported as FILE:LINE: MESSAGE. So is an
// unquoted entry that goes on over more than one line: YAML joins the
// lines into one entry, which is what a "- " indented unlike the others
// does (`- build` over `  - bad indent` becomes "build - bad indent").
// Quote an entry to have it span lines.
//
// "defaults: false" switches every default off; a mapping switches them one
// by one, and a default it does not name stays on.
//
// # Entries
//
// An entry is a path or a pattern, written alone or as a mapping with the
// key path; an allow entry's mapping may also say broad: true.
//
// An allow entry that covers /, the home directory or a directory above
// the project is refused (allow: [/], [~/] or [../..] would switch the
// watch off without a word), unless it is marked broad:
//
//	allow:
//	  - {path: ~/, broad: true}
//
// The project is the directory of the config file, or the working
// directory when there is none. The check applies to --allow entries too;
// those are all marked broad by Options.ExtraAllowBroad.
//
// A leading "~/" (or a lone "~", quoted: YAML reads ~ alone as empty)
// stands for the home directory; $VAR and ${VAR} are replaced by the variable's
// value, and a variable that is not set (or is empty) is an error. Text that
// comes from the home directory or a variable matches literally, even if it
// contains pattern characters. "\$" is a literal '$'. A relative entry is
// relative to the directory of the config file; a relative --allow entry is
// relative to the working directory. Entries are then cleaned: repeated
// and trailing slashes, "." and ".." are removed.
//
// # Built-in defaults
//
//   - tmp: $TMPDIR when it is set to an absolute path, else /tmp.
//   - dev: /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom,
//     /dev/tty, /dev/ptmx, /dev/pts and /dev/shm. (/dev/stdout, /dev/stderr
//     and /dev/fd/N are links to open descriptors: a write through them is
//     judged by where it lands.)
//   - go-cache: the directories that `go env` reports as GOCACHE,
//     GOMODCACHE and GOTELEMETRYDIR, when go is installed. go env runs
//     only when COMMAND may run go (see MayRunGo: go itself, programs built
//     by Go such as test binaries, scripts, shells, make, interpreters and
//     other programs that run commands), while writewatch starts up, as
//     the invoking user, in /, with GOTOOLCHAIN=local so that it never
//     downloads a Go release. For any other COMMAND, and when go env fails
//     or has not answered GoEnvPatience (5 s) after the list is needed,
//     Go's documented locations stand in (see GoCacheDefaults: the
//     variables, the go env file, then ~/.cache/go-build, ~/go/pkg/mod and
//     ~/.config/go/telemetry); a failure or a wait that long is warned
//     about once, and never stops the run.
//   - python-cache: **/__pycache__ and **/.pytest_cache.
//
// # Output files
//
// Options.Outputs are the regular files writewatch's own stdout and stderr
// write to (writewatch COMMAND > ci.log). COMMAND inherits them, and what
// it writes there is the run's output: each is allowed by an exact entry
// from "output:stdout" or "output:stderr", placed after --allow. It is not
// a default, so the project's carve-out does not take it back; deny
// entries still win.
//
// # The project
//
// The project is the directory of the config file in use, or the working
// directory when there is none (or it is /dev/null). A default never
// allows the project as a whole: a default that covers the project (tmp,
// for a checkout under /tmp or $TMPDIR; dev, under /dev/shm; go-cache, in
// the module cache) does not apply inside it. There only the config's own
// entries and --allow allow writes, while the rest of the default's
// directory stays allowed, so t.TempDir(), pytest's tmp_path and go's
// build directories work wherever the project lives. --print-config shows
// this as a deny entry for the project from default:project, which wins
// over those defaults only (Entry.Overrides).
//
// A default that lies inside the project, such as a GOCACHE set to a
// directory of the checkout, or that names directories rather than the
// whole project, as python-cache's __pycache__ does, stays as it is.
//
// When the leading directories of an entry go through a symbolic link,
// the entry is also added with that link resolved, because writes are
// reported under the resolved path.
//
// # Matching
//
// Patterns are matched against absolute, clean paths, byte by byte: paths
// and patterns need not be valid UTF-8.
//
//   - '*' matches any run of bytes within one path segment (never '/').
//   - '?' matches one byte that is not '/'.
//   - '[...]' matches one byte of a class: single bytes and ranges such as
//     a-z; '[!...]' or '[^...]' negate it. A ']' right after the opening
//     '[' (or '[!', '[^') and a '-' that comes first or last stand for
//     themselves.
//   - '\' makes the next byte literal, inside a class too.
//   - '**' as a whole segment matches zero or more segments: a/**/b matches
//     a/b, a/x/b and a/x/y/b. '**' next to other text in a segment, as in
//     a**b, is an error.
//
// An entry matches a path if it matches the path itself or any directory
// above it: tests allows tests/a/b.txt, and /tmp/*.d allows /tmp/x.d/f.
// So tests and tests/** mean the same.
//
// A path may be written if some allow entry matches it and no deny entry
// does: deny wins over allow, whatever the order of the entries.
package allowlist
