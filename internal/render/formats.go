package render

import (
	"io"

	"github.com/writewatch/writewatch/report"
)

// Format is a report format writewatch writes to a file the user names
// (--NAME FILE): adding one is its file here, which registers it, and
// its golden files (TestFormatsGolden writes them with -update). The
// command's flags, its help and its outputs come from Formats.
type Format struct {
	// Name is the flag, without its dashes ("json", "junit").
	Name string
	// Usage is the flag's line in the help; the word in backquotes
	// names its value.
	Usage string
	// Example is a file name the help and the errors suggest.
	Example string
	// Ext is the extension of its golden files (CASE.EXT).
	Ext   string
	Write func(w io.Writer, r *report.Report) error
}

var formats []Format

// register adds a format, once, from its file's init.
func register(f Format) { formats = append(formats, f) }

// Formats are the file formats, in the order their files register them
// (their names' order).
func Formats() []Format { return formats }

func init() {
	register(Format{Name: "json", Usage: "write the JSON report to `FILE`", Example: "report.json", Ext: "json", Write: report.WriteJSON})
}
