package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WriteJSON writes r to w as indented JSON followed by a newline. Field
// order is that of the struct definitions; map keys are sorted.
func WriteJSON(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("report: write JSON: nil report")
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: write JSON: %w", err)
	}
	return nil
}
