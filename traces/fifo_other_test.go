//go:build !unix

package traces

import "errors"

// mkfifo fails: there are no named pipes here, and the tests that need
// one skip.
func mkfifo(string) error { return errors.New("no named pipes on this system") }
