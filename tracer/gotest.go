package tracer

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/phases"
)

// goTest is one followed Go test binary: the uprobes attached for it
// alone, or those attached to its file before it ran (prepared).
type goTest struct {
	links    []link.Link
	lay      *gobin.Layout
	prepared *preparedGoTest
}

// fileID names a file by its device and inode.
type fileID struct{ dev, ino uint64 }

// kernelFile is id as the kernel names the file (map gofiles), its
// device as struct super_block holds it (kernelDev). On a file system
// whose st_dev is not its superblock's, such as btrfs, the kernel finds
// no entry, and the binary is paused at its exec instead.
func (id fileID) kernelFile() writewatchFileKey {
	return writewatchFileKey{Ino: id.ino, Dev: kernelDev(id.dev)}
}

// fileOfKernel is the fileID of a file as the kernel names it.
func fileOfKernel(ino uint64, dev uint32) fileID {
	return fileID{dev: statDev(dev), ino: ino}
}

// preparedGoTest is a Go test binary's uprobes, attached to its file as
// soon as the Go linker wrote it (PrepareGoTest), for every process that
// runs it. Once they are, the file's entry in gofiles tells the kernel:
// a process of the tree that executes it is then not paused at its exec
// (ExecPrepared).
type preparedGoTest struct {
	id      fileID
	written unix.Timespec // the file's mtime and size when prepared
	size    int64
	done    chan struct{} // closed once lay, links and err are set
	lay     gobin.Layout
	links   []link.Link
	err     error
	inMap   bool // in gofiles
	users   int  // followed processes running the file
}

// The functions hooked in a Go test binary (gobin.Hooks, which says
// what each is), each with the cookie that tells the one program
// (go_probe) which it is.
var goProbes = []struct {
	symbol   string
	optional bool
	cookie   writewatchWwGoProbe
}{
	{gobin.TRunner, false, writewatchWwGoProbeWW_GO_TEST_START},
	{gobin.FRunner, true, writewatchWwGoProbeWW_GO_TEST_START},
	{gobin.BRunN, true, writewatchWwGoProbeWW_GO_BENCH_START},
	{gobin.RunExample, true, writewatchWwGoProbeWW_GO_EXAMPLE_START},
	{gobin.RunCleanup, true, writewatchWwGoProbeWW_GO_TEST_END},
	{gobin.ProcessRunResult, true, writewatchWwGoProbeWW_GO_TEST_END},
	{gobin.RunqPut, true, writewatchWwGoProbeWW_GO_NEW_GOROUTINE},
}

// PrepareGoTest attaches the test-boundary uprobes to the Go test binary
// at path, which the Go linker has just written and go test will run.
// Attaching waits for one of the kernel's grace periods (about 10 ms);
// it passes here, while go test finishes the file (it rewrites the build
// ID, about 10 ms more), rather than while the binary is paused at its
// exec. These uprobes fire in every process that runs the file; the
// program ignores those FollowGoTest was not told of. Where Go test
// uprobes are perf-event ones (one per function and process), nothing is
// prepared. A file never run keeps its uprobes until Close.
func (t *Tracer) PrepareGoTest(path string) {
	var st unix.Stat_t
	if !t.multi || unix.Stat(path, &st) != nil {
		return
	}
	id := fileID{st.Dev, st.Ino}
	if old := t.prepared[id]; old != nil {
		if old.written == st.Mtim && old.size == st.Size {
			return
		}
		// Linked again in place: the old uprobes' offsets are the old
		// binary's.
		<-old.done
		delete(t.prepared, id)
		t.unprepare(old)
	}
	p := &preparedGoTest{id: id, written: st.Mtim, size: st.Size, done: make(chan struct{})}
	t.prepared[id] = p
	t.preparing.Add(1)
	go func() {
		defer t.preparing.Done()
		defer close(p.done)
		p.lay, p.links, p.err = t.attachGoProbes(path, 0)
		if p.err != nil {
			return
		}
		// Where the entry cannot be made, the binary is paused at its
		// exec, as without it.
		val := writewatchGoproc{GoidOff: p.lay.GoidOff, ParentGoidOff: p.lay.ParentGoidOff, NameOff: p.lay.NameOff}
		p.inMap = t.objs.Gofiles.Update(id.kernelFile(), val, ebpf.UpdateAny) == nil
	}()
}

// unprepare forgets the file of p, whose uprobes no process runs: its
// gofiles entry first, so that no exec finds it after the uprobes go.
func (t *Tracer) unprepare(p *preparedGoTest) {
	if p.inMap {
		t.objs.Gofiles.Delete(p.id.kernelFile())
	}
	if p.users == 0 {
		t.closeLinks(p.links)
	}
}

// FollowGoTest follows the goroutines of the Go test binary running as
// process tgid (nsPID in this process's PID namespace), through the
// test-boundary uprobes: those prepared for its file, or attached now.
// Call it while the process is paused (ExecStopped), then resume it.
func (t *Tracer) FollowGoTest(tgid, nsPID uint32) (gobin.Layout, error) {
	exe := fmt.Sprintf("/proc/%d/exe", nsPID)
	gt := &goTest{}
	if p := t.preparedFor(exe); p != nil {
		end := phases.Start("Go test binary: prepared uprobes")
		<-p.done
		end()
		if p.err == nil {
			p.users++
			gt.lay, gt.prepared = &p.lay, p
		}
	}
	if gt.prepared == nil {
		lay, links, err := t.attachGoProbes(exe, nsPID)
		if err != nil {
			return lay, err
		}
		gt.lay, gt.links = &lay, links
	}
	lay := gt.lay
	val := writewatchGoproc{GoidOff: lay.GoidOff, ParentGoidOff: lay.ParentGoidOff, NameOff: lay.NameOff}
	if err := t.objs.Goprocs.Update(tgid, val, ebpf.UpdateAny); err != nil {
		t.release(gt)
		return *lay, fmt.Errorf("follow Go test %d: %w", tgid, err)
	}
	t.gotests[tgid] = gt
	go lay.Lines() // made while the binary runs, for GoTestSource
	return *lay, nil
}

// FollowPreparedGoTest follows the Go test binary running as process
// tgid, which the kernel found had its file's uprobes attached (an exec
// record with ExecPrepared, whose Ino and Dev name the file) and did not
// pause: its goprocs entry is made.
func (t *Tracer) FollowPreparedGoTest(tgid uint32, ino uint64, dev uint32) (gobin.Layout, error) {
	p := t.prepared[fileOfKernel(ino, dev)]
	if p == nil {
		// Its last other process exited meanwhile, and took the
		// uprobes.
		return gobin.Layout{}, fmt.Errorf("%w: its file's uprobes were detached as it started", gobin.ErrNotGoTest)
	}
	end := phases.Start("Go test binary: prepared uprobes")
	<-p.done // closed before its gofiles entry was made
	end()
	p.users++
	t.gotests[tgid] = &goTest{lay: &p.lay, prepared: p}
	go p.lay.Lines() // made while the binary runs, for GoTestSource
	return p.lay, nil
}

// preparedFor is what PrepareGoTest readied for the file exe is, or nil.
func (t *Tracer) preparedFor(exe string) *preparedGoTest {
	var st unix.Stat_t
	if len(t.prepared) == 0 || unix.Stat(exe, &st) != nil {
		return nil
	}
	return t.prepared[fileID{st.Dev, st.Ino}]
}

// attachGoProbes reads the layout of the Go test binary exe and attaches
// its uprobes, for process pid alone (in this process's PID namespace),
// or for every process when pid is 0.
func (t *Tracer) attachGoProbes(exe string, pid uint32) (gobin.Layout, []link.Link, error) {
	end := phases.Start("Go test binary: read layout")
	lay, err := gobin.Read(exe)
	end()
	if err != nil {
		return lay, nil, err
	}
	t.goOnce.Do(t.goStart) // the programs, if they are not loading yet
	<-t.goReady
	if t.goErr != nil {
		return lay, nil, t.goErr
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return lay, nil, fmt.Errorf("open %s: %w", exe, err)
	}
	var links []link.Link
	fail := func(err error) (gobin.Layout, []link.Link, error) {
		for _, l := range links {
			l.Close()
		}
		return lay, nil, err
	}
	// One link for every function hooked (uprobe_multi): closing it
	// waits for one grace period of the kernel's; where each function
	// needs a perf-event uprobe of its own, one each.
	var addrs, cookies []uint64
	for _, p := range goProbes {
		addr, ok := lay.Funcs[p.symbol]
		if !ok && p.optional {
			continue
		}
		if !ok {
			return fail(fmt.Errorf("%w: no function %s", gobin.ErrNotGoTest, p.symbol))
		}
		addrs, cookies = append(addrs, addr), append(cookies, uint64(p.cookie))
	}
	prog := t.objs.GoProbe
	if t.multi {
		l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: addrs, Cookies: cookies, PID: pid})
		if err != nil {
			return fail(classify("attach uprobe", err))
		}
		return lay, []link.Link{l}, nil
	}
	for i, addr := range addrs {
		l, err := ex.Uprobe("", prog, &link.UprobeOptions{PID: int(pid), Address: addr, Cookie: cookies[i]})
		if err != nil {
			return fail(classify("attach uprobe", err))
		}
		links = append(links, l)
	}
	return lay, links, nil
}

// release closes gt's own uprobes, or, when it ran a prepared file, the
// file's once no other followed process runs it. The kernel takes a
// while to unregister them, so they close in the background; Close
// waits for them.
func (t *Tracer) release(gt *goTest) {
	if p := gt.prepared; p != nil {
		if p.users--; p.users > 0 {
			return
		}
		if t.prepared[p.id] == p {
			delete(t.prepared, p.id)
			t.unprepare(p)
		} else {
			// Linked again in place meanwhile: forgotten already.
			t.closeLinks(p.links)
		}
		return
	}
	t.closeLinks(gt.links)
}

// closeLinks closes links in the background (Close waits).
func (t *Tracer) closeLinks(links []link.Link) {
	for _, l := range links {
		t.detaching.Add(1)
		go func() {
			defer t.detaching.Done()
			l.Close()
		}()
	}
}

// ForgetGoTest detaches the uprobes of a Go test binary that exited
// (release).
func (t *Tracer) ForgetGoTest(tgid uint32) {
	gt := t.gotests[tgid]
	if gt == nil {
		return
	}
	delete(t.gotests, tgid)
	t.objs.Goprocs.Delete(tgid)
	t.release(gt)
}

// GoTestFuncs lists the Test and Fuzz functions of the followed Go test
// binary tgid (gobin.Layout.TestFuncs), from the line table read when it
// started: the binary need not be there any more. Ask before its exit
// record is handed to ForgetGoTest.
func (t *Tracer) GoTestFuncs(tgid uint32) ([]gobin.TestFunc, error) {
	gt := t.gotests[tgid]
	if gt == nil {
		return nil, fmt.Errorf("process %d is no Go test binary writewatch follows", tgid)
	}
	return gt.lay.TestFuncs()
}

// GoTestSource names the source file and line of the function at pc in
// the followed Go test binary tgid (gobin.Layout.Source).
func (t *Tracer) GoTestSource(tgid uint32, pc uint64, name string) (string, int) {
	gt := t.gotests[tgid]
	if gt == nil {
		return "", 0
	}
	return gt.lay.Source(pc, name)
}
