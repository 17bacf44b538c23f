package crosscheck

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

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
// while the pidfd's process has not exited, the pid is still its. Used
// by Wanted only, from the witness's goroutine.
type outside struct {
	fds map[int32]int
}

// maxOutside bounds the descriptors held; past it they are all closed.
const maxOutside = 1024

// has reports whether pid is a process known to be outside the tree.
func (o *outside) has(pid int32) bool {
	fd, ok := o.fds[pid]
	if !ok {
		return false
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 0); err == nil && n == 0 {
		return true
	}
	// It exited: the pid may be someone else's now.
	unix.Close(fd)
	delete(o.fds, pid)
	return false
}

// add remembers pid as outside the tree, given that the kernel does not
// count it in the tree: it reports false when the process is gone or a
// zombie (then it may be a process of the tree that exited, whose
// change the loop decides on).
func (o *outside) add(pid int32) bool {
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return false
	}
	if !running(pid) {
		unix.Close(fd)
		return false
	}
	if o.fds == nil || len(o.fds) >= maxOutside {
		o.close()
		o.fds = map[int32]int{}
	}
	o.fds[pid] = fd
	return true
}

func (o *outside) close() {
	for _, fd := range o.fds {
		unix.Close(fd)
	}
	o.fds = nil
}

// running reports whether process pid exists and has not exited (is not
// a zombie), from /proc/PID/stat.
func running(pid int32) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	switch data[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// parentOf is process pid's parent in this PID namespace, from
// /proc/PID/stat.
func parentOf(pid int32) (int32, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return int32(ppid), err
}
