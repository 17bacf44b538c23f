package witness

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// members are the processes of the tree as the witness numbers them
// (its PID namespace's pids), for Wanted, which the witness asks from
// its own goroutine, and for the loop. A process that left stays a
// member until a barrier placed after its exit has been reached: the
// witness reads a change after the process made it, possibly after the
// process exited and its exit record was handled.
type members struct {
	mu   sync.RWMutex
	pids map[int32]member
	// gen is the id of the last barrier asked for; inFlight says it has
	// not been reached yet.
	gen      uint64
	inFlight bool
	leaving  int // members that left and wait for a barrier
}

type member struct {
	tgid uint32 // initial PID namespace; 0 when not known yet
	left uint64 // 0: alive; else the first barrier after its exit
}

func newMembers() *members { return &members{pids: map[int32]member{}} }

// has reports whether pid is a member, and its tgid.
func (m *members) has(pid int32) (uint32, bool) {
	m.mu.RLock()
	p, ok := m.pids[pid]
	m.mu.RUnlock()
	return p.tgid, ok
}

func (m *members) join(pid int32, tgid uint32) {
	if pid <= 0 {
		return
	}
	m.mu.Lock()
	m.pids[pid] = member{tgid: tgid}
	m.mu.Unlock()
}

func (m *members) leave(pid int32) {
	m.mu.Lock()
	if p, ok := m.pids[pid]; ok && p.left == 0 {
		p.left = m.gen + 1
		m.pids[pid] = p
		m.leaving++
	}
	m.mu.Unlock()
}

// barrier returns the id of a new barrier when members wait for one and
// none is in flight.
func (m *members) barrier() (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight || m.leaving == 0 {
		return 0, false
	}
	m.gen++
	m.inFlight = true
	return m.gen, true
}

// reached forgets the members that left before barrier id was placed.
func (m *members) reached(id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id == m.gen {
		m.inFlight = false
	}
	for pid, p := range m.pids {
		if p.left != 0 && p.left <= id {
			delete(m.pids, pid)
			m.leaving--
		}
	}
}

// outside remembers processes known to be outside the tree, each by a
// pidfd, so that a reused pid is never taken for the process it was:
// while the pidfd's process has not exited, the pid is still its. The
// pidfds wait in an epoll set, which says which of them exited; it is
// asked at most once a millisecond, and the kernel needs far longer to
// hand out a pid again. Used by Wanted only, from the witness's
// goroutine.
type outside struct {
	fds    map[int32]int
	epfd   int // the epoll set, made with fds
	events []unix.EpollEvent
	asked  time.Time
	broken bool // no epoll: remember nothing
}

// maxOutside bounds the descriptors held; past it they are all closed.
const maxOutside = 1024

// reapEvery is how often the epoll set is asked which processes exited.
const reapEvery = time.Millisecond

// has reports whether pid is a process known to be outside the tree.
func (o *outside) has(pid int32) bool {
	if len(o.fds) == 0 {
		return false
	}
	if now := time.Now(); now.Sub(o.asked) >= reapEvery {
		o.asked = now
		o.reap()
	}
	_, ok := o.fds[pid]
	return ok
}

// reap forgets the processes that exited: their pids may be someone
// else's now.
func (o *outside) reap() {
	for {
		n, err := unix.EpollWait(o.epfd, o.events, 0)
		if err != nil || n <= 0 {
			return
		}
		for _, ev := range o.events[:n] {
			pid := ev.Fd
			if fd, ok := o.fds[pid]; ok {
				unix.Close(fd) // closing removes it from the set
				delete(o.fds, pid)
			}
		}
		if n < len(o.events) {
			return
		}
	}
}

// add remembers pid as outside the tree, given that the kernel does not
// count it in the tree: it reports false when the process is gone or a
// zombie (then it may be a process of the tree that exited, whose
// change the loop decides on).
func (o *outside) add(pid int32) bool {
	if o.broken {
		return false
	}
	if o.fds == nil {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			o.broken = true
			return false
		}
		o.epfd, o.fds, o.events = epfd, map[int32]int{}, make([]unix.EpollEvent, 64)
	}
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return false
	}
	if !running(pid) {
		unix.Close(fd)
		return false
	}
	if len(o.fds) >= maxOutside {
		for p, f := range o.fds {
			unix.Close(f)
			delete(o.fds, p)
		}
	}
	if unix.EpollCtl(o.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: pid}) != nil {
		unix.Close(fd)
		return false
	}
	o.fds[pid] = fd
	return true
}

func (o *outside) close() {
	for _, fd := range o.fds {
		unix.Close(fd)
	}
	if o.fds != nil {
		unix.Close(o.epfd)
	}
	o.fds = nil
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h):
// set as the task begins to exit, before the kernel drops it from the
// tree at sched_process_exit, well before it is a zombie.
const pfExiting = 0x4

// running reports whether process pid exists and is not exiting (not a
// zombie, and not on its way to one: between the kernel's exit of the
// tree and the zombie, a process that was of the tree would pass for
// one that never was), from /proc/PID/stat.
func running(pid int32) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	// state ppid pgrp session tty_nr tpgid flags ...
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 7 {
		return false
	}
	switch f[0] {
	case "Z", "X", "x":
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting == 0
}
