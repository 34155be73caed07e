package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpDefaults: no command's -h prints an empty default ("(default )"
// for export's --node, issue 34 item 12), and each one lists its flags.
func TestHelpDefaults(t *testing.T) {
	args := [][]string{{"-h"}}
	for _, c := range commands {
		args = append(args, []string{c.name, "-h"})
	}
	for _, a := range args {
		var out, errb bytes.Buffer
		code := run(context.Background(), a, &out, &errb)
		text := out.String() + errb.String()
		if code != 0 {
			t.Errorf("%v: exit %d", a, code)
		}
		for _, bad := range []string{"(default )", `(default "")`} {
			if strings.Contains(text, bad) {
				t.Errorf("%v: help prints %s:\n%s", a, bad, text)
			}
		}
	}
}
