package launch

import (
	"fmt"
	"runtime"
)

// AsUser runs fn with the rights of id: on a thread of its own that has
// taken id's groups, gid and uid (becomeThreadOnly), so that what fn
// creates belongs to id and what fn opens is opened as id would open it
// (a symbolic link planted by id leads nowhere id could not go anyway).
// The thread is never unlocked: it ends with fn, and the runtime's other
// threads keep writewatch's own identity. A nil id runs fn as is.
//
// fn must not start goroutines that expect id's rights: they may run on
// any thread.
func AsUser(id *Identity, fn func() error) error {
	if id == nil {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := becomeThreadOnly(id); err != nil {
			errc <- fmt.Errorf("act as uid %d: %w", id.UID, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
