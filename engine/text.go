package engine

import "strconv"

// text builds a string of strings and integers in a buffer the caller
// keeps on its stack, for the names and messages every node makes ("call
// f12: record #4071"): one allocation for the string, where concatenation
// with strconv.Itoa costs one more for every number past 99. Each method
// takes and returns the value, so that the buffer does not escape.
type text struct{ b []byte }

func (t text) s(x string) text { t.b = append(t.b, x...); return t }
func (t text) i(x int) text    { t.b = strconv.AppendInt(t.b, int64(x), 10); return t }
func (t text) String() string  { return string(t.b) }
