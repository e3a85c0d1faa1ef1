// Package field is the typed form of a configuration error: which setting
// is wrong and why. Config structs across surge return these from their
// Validate methods, so the command line can name the flag or the YAML key
// the user wrote without parsing error strings.
//
// A field is named by its YAML key ("max_num_seqs"); nested and indexed
// settings by a path ("sim.max_num_seqs", "phases[1].duration"). The
// command line owns the mapping from keys to flag names.
package field

import (
	"errors"
	"fmt"
	"strings"
)

// Error says that one setting is wrong.
type Error struct {
	Field   string // YAML key or path, e.g. "rate", "phases[1].duration"; "" for a rule across fields
	Message string // what is wrong, e.g. "must be > 0, got -1"
}

// Error returns "field: message", or the message alone for a cross-field rule.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errors is every problem found in one configuration. Its zero value holds
// none; Err turns it into an error (nil when empty).
type Errors []*Error

// Add records a problem with field.
func (es *Errors) Add(field, format string, a ...any) {
	*es = append(*es, &Error{Field: field, Message: fmt.Sprintf(format, a...)})
}

// Merge appends the field errors of err, each field prefixed with prefix
// and a dot (nothing when prefix is ""); any other non-nil error becomes a
// cross-field problem with its text.
func (es *Errors) Merge(prefix string, err error) {
	if err == nil {
		return
	}
	var other Errors
	if !errors.As(err, &other) {
		var one *Error
		if errors.As(err, &one) {
			other = Errors{one}
		} else {
			*es = append(*es, &Error{Message: err.Error()})
			return
		}
	}
	for _, e := range other {
		c := *e
		if prefix != "" && c.Field != "" {
			c.Field = prefix + "." + c.Field
		}
		*es = append(*es, &c)
	}
}

// Err returns es as an error, or nil when it holds nothing.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Error returns one line per problem.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// As returns the field errors in err (an Errors or a single *Error), if any.
func As(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var one *Error
	if errors.As(err, &one) {
		return Errors{one}, true
	}
	return nil, false
}

// WithText returns an error that reads text and unwraps to fe: a package
// keeps its own wording ("schedule: phase \"burst\": duration: …") while
// callers still find the field by path.
func WithText(text string, fe *Error) error { return &textError{text, fe} }

type textError struct {
	text string
	fe   *Error
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.fe }
