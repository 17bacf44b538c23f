package witness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/mountinfo"
	"github.com/writewatch/writewatch/report"
)

// FinalBarrier is the id of the barrier Finish places.
const FinalBarrier = ^uint64(0)

// Watch is the witness in a run, from before COMMAND starts to its end:
// the fanotify witness, the Queue its changes wait in for the run's
// stream, its barriers, and the contents of files watched on demand
// (watchcontents.go). What the changes mean is the Checker's, which the
// run's session holds.
type Watch struct {
	// Queue is the witness's changes and barriers, for the run's
	// stream; nil when the witness is not active.
	Queue *Queue

	opts    WatchOptions
	checker *Checker
	w       *Witness
	info    report.WitnessInfo
	// lazy: contents are watched on demand and not yet (contents.go).
	lazy   bool
	ctx    context.Context
	cancel context.CancelFunc
	syncs  sync.WaitGroup
	final  chan error
}

// WatchOptions configure a Watch.
type WatchOptions struct {
	// Checker decides, for the witness, which processes' changes it
	// wants (Checker.Wanted), and when processes that left need a
	// barrier; the Watch gives it the kernel's ignore marks.
	Checker *Checker
	// Allow judges the files COMMAND inherits.
	Allow *allowlist.List
	// ContentsLater starts the witness without the writes to the
	// contents of files (Options.ContentsLater), with Inherited, the
	// descriptors COMMAND inherits, watched one by one. Later tells the
	// kernel before COMMAND starts (tracer.ContentsLater), Watched once
	// they are watched (tracer.ContentsWatched): see watchcontents.go.
	ContentsLater  bool
	Inherited      []int
	Later, Watched func() error
	// Incomplete is told each reason the run could not see everything
	// that the Watch finds (an inherited file it cannot watch, contents
	// it could not watch); nil: dropped.
	Incomplete func(reason string)
}

// WatchPaths are the paths whose filesystems hold what the allowlist
// protects: the project, the home directory, /, and the nearest existing
// directory above each deny entry.
func WatchPaths(allow *allowlist.List, project, home string) []string {
	paths := []string{project, home, "/"}
	if allow != nil {
		for _, e := range allow.Entries() {
			if e.Kind != allowlist.Deny {
				continue
			}
			dir := e.Pattern
			if i := strings.IndexAny(dir, `*?[\`); i >= 0 {
				dir = dir[:i]
			}
			for dir = filepath.Dir(dir); dir != "/"; dir = filepath.Dir(dir) {
				if st, err := os.Stat(dir); err == nil && st.IsDir() {
					break
				}
			}
			paths = append(paths, dir)
		}
	}
	out := paths[:0]
	for _, p := range paths {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// StartWatch starts the witness on the filesystems of paths, its private
// directory under syncDir. The witness may be unavailable (not root, an
// old kernel, no filesystem it can watch): the Watch then says why
// (Info) and its Source is nil.
func StartWatch(opts WatchOptions, paths []string, syncDir string) *Watch {
	w := &Watch{opts: opts, checker: opts.Checker}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	src := NewQueue()
	wo := Options{Paths: paths, Handle: src.Handle, Wanted: w.checker.Wanted, SyncDir: syncDir, ContentsLater: opts.ContentsLater}
	wit, err := New(wo)
	if err != nil {
		w.info.Unavailable = unavailable(err)
		return w
	}
	w.w, w.Queue = wit, src
	w.checker.opts.Ignore, w.checker.opts.IgnoreFile = wit.Ignore, wit.IgnoreFile
	w.info.Active = true
	w.info.Contents, w.lazy = report.ContentsFromStart, opts.ContentsLater
	if w.lazy {
		w.info.Contents = report.ContentsOnDemand
	}
	w.inherited(opts.Inherited)
	if mounts, err := mountinfo.Read(); err != nil {
		w.WatchContents(fmt.Sprintf("the start (the mounts could not be read: %v)", err))
	} else {
		w.aliased(mounts)
	}
	for _, fs := range wit.Filesystems() {
		f := report.WitnessFilesystem{Paths: fs.Paths, Type: fs.Type, Watched: fs.Err == nil}
		if fs.Err != nil {
			f.Error = fs.Err.Error()
		}
		w.info.Filesystems = append(w.info.Filesystems, f)
	}
	return w
}

// Off is a Watch that watches nothing, for why (a run whose sandbox's
// overlays hold what changed).
func Off(checker *Checker, why string) *Watch {
	w := &Watch{checker: checker}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.info.Unavailable = why
	return w
}

// unavailable says why the witness watches nothing, in a user's words.
func unavailable(err error) string {
	switch {
	case errors.Is(err, ErrNeedsRoot):
		return "watching whole filesystems needs CAP_SYS_ADMIN (root)"
	case errors.Is(err, ErrUnsupported):
		return "the kernel lacks fanotify events with directory handles and names (Linux 5.9 or later)"
	}
	return strings.TrimPrefix(err.Error(), "witness: ")
}

// Active says the witness watches at least one filesystem.
func (w *Watch) Active() bool { return w != nil && w.Queue != nil }

// PlaceBarrier places barrier id (the Checker's Barrier): Sync, then
// the barrier behind the changes Sync waited for.
func (w *Watch) PlaceBarrier(id uint64) {
	if !w.Active() {
		return
	}
	w.syncs.Go(func() {
		if w.w.Sync(w.ctx) == nil {
			w.Queue.Barrier(id)
		}
	})
}

// Finish places the final barrier, behind every change the kernel
// queued before it was called, and returns a channel that receives nil
// once it is placed, or why it could not be within patience.
func (w *Watch) Finish(patience time.Duration) <-chan error {
	w.final = make(chan error, 1)
	w.syncs.Go(func() {
		ctx, cancel := context.WithTimeout(w.ctx, patience)
		defer cancel()
		err := w.w.Sync(ctx)
		if err == nil {
			// No change after this one is read: the kernel may free
			// the marks while the run ends (Unmark). Marks it
			// could not remove only wait for Close.
			_ = w.w.Unmark()
			w.Queue.Barrier(FinalBarrier)
		}
		w.final <- err
	})
	return w.final
}

// Close stops the witness and releases what the Checker holds for it.
func (w *Watch) Close() error {
	w.cancel()
	var err error
	if w.w != nil {
		err = w.w.Close()
		w.Queue.Close()
	}
	w.syncs.Wait()
	w.checker.Close()
	return err
}

// Info is the Watch's part of the witness's account for the report:
// whether it watched, which filesystems, when contents were watched from
// (the Checker's Stats count the changes).
func (w *Watch) Info() report.WitnessInfo { return w.info }

// Incompletely tells Options.Incomplete a reason the run could not see
// everything.
func (w *Watch) Incompletely(reason string) {
	if w.opts.Incomplete != nil {
		w.opts.Incomplete(reason)
	}
}

// Notes are what the report's notes say of the witness whose account is
// info: that it watched nothing, or not some filesystem.
func Notes(info *report.WitnessInfo) []string {
	if !info.Active {
		return []string{"the filesystem witness, a second account of what changed on disk, is off: " + info.Unavailable +
			"; writes are seen through their system calls only"}
	}
	var notes []string
	for _, fs := range info.Filesystems {
		if !fs.Watched {
			notes = append(notes, fmt.Sprintf("the filesystem witness cannot watch the filesystem of %s (%s): %s; writes there are seen through their system calls only",
				strings.Join(fs.Paths, ", "), fs.Type, fs.Error))
		}
	}
	return notes
}
