package status

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MinRows is the least height of terminal the line is shown on: below it
// COMMAND keeps every row.
const MinRows = 4

// The control sequences, all VT100 (ECMA-48 and DEC private):
const (
	esc        = "\x1b"
	saveCursor = esc + "7"   // DECSC: position, attributes, wrap state
	restCursor = esc + "8"   // DECRC
	index      = esc + "D"   // IND: down a row, scrolling at the bottom; the column stays
	cursorUp   = esc + "[A"  // CUU 1
	sgrReset   = esc + "[0m" // attributes off, so that erasing paints no colour
	eraseRow   = esc + "[2K" // EL 2: the whole row
	eraseToEnd = esc + "[K"  // EL 0: from the cursor to the end of the row
	fullRegion = saveCursor + esc + "[r" + restCursor
	// eraseBelow erases from the cursor to the end of the screen: after a
	// resize, the line, wherever the terminal put it, is below COMMAND's
	// cursor.
	eraseBelow = saveCursor + sgrReset + esc + "[J" + restCursor
)

// freshRow puts the cursor at the start of a row of its own: where it
// is when it is at the start of a row already, else at the start of
// the next. cols spaces fill the row to its last column (the cursor
// waits there to wrap) or, from past its first column, go on to the
// next row; a carriage return goes back to the start of the row they
// ended on, and the row is erased. The attributes COMMAND left are
// reset first, so that the spaces paint nothing. Shells start a prompt
// on its own row so (zsh's PROMPT_SP).
func freshRow(cols int) string {
	if cols < 2 {
		return "\r\n"
	}
	return sgrReset + strings.Repeat(" ", cols) + "\r" + eraseToEnd
}

// setRegion is DECSTBM: rows top to bottom scroll, the others stay. It
// moves the cursor to the top left.
func setRegion(top, bottom int) string {
	return esc + "[" + strconv.Itoa(top) + ";" + strconv.Itoa(bottom) + "r"
}

// toRow is CUP: the cursor to the first column of row.
func toRow(row int) string {
	return esc + "[" + strconv.Itoa(row) + ";1H"
}

// reserve sets the last of rows apart: one row down and back up (which
// scrolls COMMAND's output up a row if the cursor was on the last one, so
// that nothing is left there), then the scroll region to the rows above
// it, the cursor put back where it was.
func reserve(rows int) string {
	return index + saveCursor + setRegion(1, rows-1) + restCursor + cursorUp
}

// draw writes line in the last of rows, the cursor and its attributes put
// back where COMMAND left them.
func draw(rows int, line string) string {
	return saveCursor + toRow(rows) + sgrReset + eraseRow + line + restCursor
}

// release erases the last of rows and gives the terminal its full scroll
// region back.
func release(rows int) string {
	return saveCursor + toRow(rows) + sgrReset + eraseRow + esc + "[r" + restCursor
}

// Supported reports whether the line can be shown on f, with the
// environment getenv: f is a terminal, and Unsupported finds nothing
// against the terminal TERM and the rest of the environment name.
func Supported(f *os.File, getenv func(string) string) bool {
	return IsTerminal(f) && Unsupported(getenv) == ""
}

// Unsupported says why the environment rules the line out, or "":
//   - TERM is unset, dumb or unknown, or names a terminal without a
//     scroll region (vt52, ansi);
//   - the terminal is one that drops from its scrollback the lines that
//     scroll off a region which leaves out the last row: iTerm2 (unless
//     "Save lines to scrollback when an app status bar is present" is
//     on, which cannot be seen from here) and Windows Terminal, where
//     they say so (LC_TERMINAL, TERM_PROGRAM, WT_SESSION). Inside tmux or
//     screen, which keep those lines, the terminal outside does not
//     matter.
func Unsupported(getenv func(string) string) string {
	term := getenv("TERM")
	switch {
	case term == "" || term == "unknown":
		return "TERM names no terminal"
	case term == "dumb" || strings.HasPrefix(term, "dumb-") || term == "vt52" || term == "ansi":
		return "TERM=" + term + " has no scroll region"
	}
	if getenv("TMUX") != "" || getenv("STY") != "" ||
		strings.HasPrefix(term, "tmux") || strings.HasPrefix(term, "screen") {
		return ""
	}
	switch {
	case getenv("LC_TERMINAL") == "iTerm2" || getenv("TERM_PROGRAM") == "iTerm.app":
		return "iTerm2 drops lines scrolled off a scroll region from its scrollback"
	case getenv("WT_SESSION") != "":
		return "Windows Terminal drops lines scrolled off a scroll region from its scrollback"
	}
	return ""
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Terminal returns the options for drawing on the terminal f: its size,
// whether this process is in its foreground, and the signals of a resize,
// a stop and a continue.
func Terminal(f *os.File, color bool) Options {
	fd := int(f.Fd())
	return Options{
		Color: color,
		Size: func() (int, int) {
			ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
			if err != nil {
				return 80, 0 // no rows known: no line
			}
			if ws.Col == 0 {
				return 80, int(ws.Row)
			}
			return int(ws.Col), int(ws.Row)
		},
		Foreground: func() bool {
			pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
			// Not this process's controlling terminal: no job control on
			// it, nobody else to give it to.
			return err != nil || pgrp == unix.Getpgrp()
		},
		Signals: make(chan os.Signal, 4),
	}
}
