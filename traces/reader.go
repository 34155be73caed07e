package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// Limits on what a reader accepts. Each one bounds the time or memory a
// single file can cost, so a broken or hostile file is refused early; the
// refusal names the limit.
const (
	// MaxLineBytes is the longest line, in bytes (4 MiB). Longer lines are
	// skipped without being buffered whole.
	MaxLineBytes = 4 << 20
	// MaxNesting is the deepest nesting of JSON objects and lists in a line.
	MaxNesting = 16
	// MaxRecords is the most records a trace may have.
	MaxRecords = 50_000_000
	// MaxNameLen is the longest name (tensor, function, parameter), in bytes.
	MaxNameLen = 256
	// MaxDevices is the largest "devices" a header may ask for.
	MaxDevices = 64
)

// maxSkipBytes is how far a line over MaxLineBytes is skipped to find
// its end, so that the lines after it are still checked: an endless
// line (/dev/zero) is refused once it has run this far, and the input is
// not read further. 64 MiB is read in tens of milliseconds.
const maxSkipBytes = 64 << 20

// Reader reads a trace one record at a time, so memory stays flat however
// long the file is. Each record is validated on its own (fields, types,
// names, shapes, limits); what needs the whole file (names bound, functions
// defined, shapes matching) is the checker's job.
//
// A *Problem from Next is about one line: calling Next again goes on with
// the next line, which is how the checker reports every problem. After an
// I/O error or the MaxRecords limit, Next returns io.EOF.
type Reader struct {
	file       string
	br         *bufio.Reader
	buf        []byte
	line       int
	records    int
	maxRecords int
	done       bool
	unended    bool // the last line read had no line ending (the file's last)
	hdr        Header
	// cfg is the config in force: the header's, changed by each config
	// record read so far (its byte limit bounds later shapes).
	cfg  Config
	scan scanner
	raw  rawRecord // reused by parseRecord
	// memo is the recent lines that parsed, by their text: the number
	// of each one's record in memoRecs (Record.memoKey-1). The records
	// lie in the order their lines first came, which is the order a loop
	// reads them again (where a map of records had them in its slots, at
	// random), and the map holds 4 bytes a line, not a record of 400.
	// memoRecs are chunks of memoChunk records, never moved nor copied
	// as the memo grows; memoN of them are in use.
	memo     map[string]int32
	memoRecs [][]memoEntry
	memoN    int
	// prev1 and prev2 are the memo's entries of the last two records
	// (-1: none, or a record it does not hold), whose successors predict
	// the next line (memoEntry.next).
	prev1, prev2 int32
}

// memoEntry is a remembered line: its text, its record, and which entries
// came one and two records after it the last time it came. A loop reads
// its lines in the order it did the last time round, so the entry one
// after the last record's, or two after the one before (a line that comes
// between each two others, as a step does, has no one successor), is
// almost always the next line: comparing the line with it saves the map's
// hash of the line and its probe (a miss a line in a loop over ten
// thousand functions). Wrong, the map answers; the line is compared
// whole, so the record is the map's.
type memoEntry struct {
	key         string
	rec         Record
	next, next2 int32
}

// memoChunk is the entries of one chunk of Reader.memoRecs (113 KB).
const memoChunk = 256

// entry returns memo entry i.
func (r *Reader) entry(i int32) *memoEntry { return &r.memoRecs[i/memoChunk][i%memoChunk] }

// recall returns the memo's entry of line, or -1.
func (r *Reader) recall(line []byte) int32 {
	if r.memo == nil {
		return -1
	}
	if r.prev1 >= 0 {
		if i := r.entry(r.prev1).next; i >= 0 && r.entry(i).key == string(line) {
			return i
		}
	}
	if r.prev2 >= 0 {
		if i := r.entry(r.prev2).next2; i >= 0 && r.entry(i).key == string(line) {
			return i
		}
	}
	if i, ok := r.memo[string(line)]; ok {
		return i
	}
	return -1
}

// follow records that entry i (-1: a record the memo does not hold) comes
// after the last two records.
func (r *Reader) follow(i int32) {
	if r.prev1 >= 0 {
		r.entry(r.prev1).next = i
	}
	if r.prev2 >= 0 {
		r.entry(r.prev2).next2 = i
	}
	r.prev2, r.prev1 = r.prev1, i
}

// A long trace is mostly repetition (a training loop calls the same
// functions on the same names step after step), so Next keeps the records
// of up to memoLines recent distinct lines of at most memoLineBytes and
// hands out a copy when the same text comes again, instead of decoding and
// validating it anew: a record's meaning depends only on its text and the
// header. Records so made share their slices, which is why records are
// read-only. memoLines covers a program of ten thousand compiled
// functions called in turn (a line each): with 1,024 such a loop decoded
// every line and remade the memo every 1,024 records (issue 14; about 8
// MB when full, and the memo grows as lines come, so a short or
// repetitive trace holds what it uses).
const (
	memoLines     = 16384
	memoLineBytes = 1024
)

// NewReader reads and validates the header line of a trace. file names the
// trace in problems.
func NewReader(r io.Reader, file string) (*Reader, error) {
	rd := &Reader{file: file, br: bufio.NewReaderSize(r, 64<<10), maxRecords: MaxRecords, prev1: -1, prev2: -1}
	line, err := rd.readLine()
	// A byte order mark is not JSON, but editors on Windows put one in front
	// of UTF-8 files: it is skipped, as it carries no meaning in UTF-8.
	line = bytes.TrimPrefix(line, utf8BOM)
	if err == io.EOF {
		return nil, rd.problem(1, `empty file: line 1 must be the header, e.g. {"cgtviz": 1}`)
	}
	if err != nil {
		return nil, err
	}
	h, p := rd.parseHeader(line)
	if p != nil {
		return nil, p
	}
	rd.hdr, rd.cfg = h, h.Config
	return rd, nil
}

// Header returns the trace's header, with config defaults filled in.
func (r *Reader) Header() Header { return r.hdr }

// Next returns the next record, with Line set, or io.EOF after the last.
// Records are read-only: one may share its slices with an earlier record
// of the same text.
// Blank lines are skipped. A *Problem comes with the part of the record
// that could be decoded (at least Line and, when known, Op), so a checker
// can go on without cascading errors.
func (r *Reader) Next() (Record, error) {
	for {
		if r.done {
			return Record{}, io.EOF
		}
		line, err := r.readLine()
		if err != nil {
			return Record{Line: r.line}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r.records++
		if r.records > r.maxRecords {
			r.done = true
			return Record{Line: r.line}, r.problem(r.line, fmt.Sprintf("more than %d records (MaxRecords)", r.maxRecords))
		}
		if i := r.recall(line); i >= 0 {
			r.follow(i)
			rec := r.entry(i).rec
			rec.Line = r.line
			return rec, nil
		}
		rec, p := r.parseRecord(line)
		rec.Line = r.line
		if p != nil && r.unended {
			if c := cutLine(r.file, r.line, r.records-1, line); c != nil {
				r.done = true
				return rec, c
			}
		}
		if p != nil {
			r.follow(-1)
			return rec, p
		}
		switch {
		case rec.Op == OpConfig:
			// A config record changes the limits later records are read
			// under: what was remembered was read under the old ones.
			r.memo, r.prev1, r.prev2 = nil, -1, -1
		case rec.Op == OpDef:
			// A function is defined once, so its line does not come
			// again in a trace that checks: remembered, ten thousand defs
			// filled the memo and had it remade in the calls that follow.
			r.follow(-1)
		case len(line) <= memoLineBytes:
			if r.memo == nil || len(r.memo) >= memoLines {
				// The chunks are used again: a record handed out is a
				// copy, which shares no part of its chunk. The entries
				// of the last records are gone, and cleared: what they
				// hold (their lines, their records' names) would stay
				// until overwritten, beside the new memo's
				// (TestCheckBoundedMemory).
				for _, c := range r.memoRecs {
					clear(c)
				}
				r.memo, r.memoN, r.prev1, r.prev2 = map[string]int32{}, 0, -1, -1
			}
			i := int32(r.memoN)
			if int(i)/memoChunk == len(r.memoRecs) {
				r.memoRecs = append(r.memoRecs, make([]memoEntry, memoChunk))
			}
			rec.memoKey = i + 1
			key := string(line)
			*r.entry(i) = memoEntry{key: key, rec: rec, next: -1, next2: -1}
			r.memo[key] = i
			r.memoN++
			r.follow(i)
		default:
			r.follow(-1)
		}
		return rec, nil
	}
}

// utf8BOM is the UTF-8 byte order mark (U+FEFF).
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// unmarshal decodes one JSON value into v (a pointer). It decodes with
// goccy/go-json, about three times as fast as encoding/json on trace lines
// (BENCHMARKS.md), and falls back to encoding/json when that fails, so that
// a bad line gets encoding/json's error: its types (*json.SyntaxError,
// *json.UnmarshalTypeError), its partial decoding and its messages are what
// the problems are built from. Both decoders accept the same lines and
// give the same values (FuzzDecoders). encoding/json/v2 would be the
// standard's answer, but Go 1.26 still hides it behind GOEXPERIMENT=jsonv2.
func unmarshal(data []byte, v any) error {
	if gojson.Unmarshal(data, v) == nil {
		return nil
	}
	// What the fast decoder left half-filled must not leak into the
	// partial result encoding/json gives on a type error.
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(data, v)
}

func (r *Reader) problem(line int, msg string) *Problem {
	return &Problem{File: r.file, Line: line, Msg: Printable(msg)}
}

// readLine returns the next line without its line ending. The slice is
// valid until the next call. A line over MaxLineBytes is discarded chunk by
// chunk and reported.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLineBytes+2 { // +2: room for "\r\n"
			r.line++
			r.buf = nil // let a 4 MiB buffer go
			skipped := int64(len(chunk))
			for errors.Is(err, bufio.ErrBufferFull) {
				if skipped > maxSkipBytes {
					// A line with no end in sight (/dev/zero, a binary
					// file): reading on would never end, so nothing
					// after it is read.
					r.done = true
					return nil, r.problem(r.line, fmt.Sprintf("line is longer than %s (MaxLineBytes) and has no end within %s: the rest of the input is not read", formatBytes(MaxLineBytes), formatBytes(maxSkipBytes)))
				}
				chunk, err = r.br.ReadSlice('\n')
				skipped += int64(len(chunk))
			}
			if err != nil && err != io.EOF {
				return nil, r.ioError(err)
			}
			return nil, r.problem(r.line, fmt.Sprintf("line is longer than %s (MaxLineBytes)", formatBytes(MaxLineBytes)))
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
			continue
		case err == nil:
			r.line++
			if len(r.buf) == 0 {
				return trimEOL(chunk), nil
			}
			r.buf = append(r.buf, chunk...)
			return trimEOL(r.buf), nil
		case err == io.EOF:
			if len(r.buf)+len(chunk) == 0 {
				r.done = true
				return nil, io.EOF
			}
			r.line++
			r.unended = true
			r.buf = append(r.buf, chunk...)
			return trimEOL(r.buf), nil
		default:
			return nil, r.ioError(err)
		}
	}
}

func (r *Reader) ioError(err error) *Problem {
	r.done = true
	var te *TruncatedError
	if errors.As(err, &te) {
		return r.problem(r.line+1, te.Error())
	}
	return r.problem(r.line+1, "read error: "+err.Error())
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// prepare runs the checks that must come before decoding (UTF-8, nesting,
// key spelling) and decodes line into v. It returns the top-level keys in
// file order.
func (r *Reader) prepare(line []byte, v any) (keys []string, typeErr *json.UnmarshalTypeError, p *Problem) {
	if !utf8.Valid(line) {
		off := 0
		for off < len(line) {
			c, n := utf8.DecodeRune(line[off:])
			if c == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, nil, &Problem{File: r.file, Line: r.line, Col: off + 1, Msg: "invalid UTF-8 (traces are UTF-8 text)"}
	}
	keys, keyMsg, deep := r.scan.run(line)
	if deep {
		return nil, nil, r.problem(r.line, fmt.Sprintf("JSON nested deeper than %d levels (MaxNesting)", MaxNesting))
	}
	err := unmarshal(line, v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		col := int(se.Offset)
		if col < 1 {
			col = 1
		}
		return nil, nil, &Problem{File: r.file, Line: r.line, Col: col, Msg: "invalid JSON: " + se.Error()}
	}
	if keyMsg != "" {
		return nil, nil, r.problem(r.line, keyMsg)
	}
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return nil, nil, r.problem(r.line, "a line must be a JSON object, got "+jsonKind(typeErr.Value))
		}
		return keys, typeErr, nil
	}
	if err != nil {
		return nil, nil, r.problem(r.line, "invalid JSON: "+err.Error())
	}
	return keys, nil, nil
}

type rawHeader struct {
	Cgtviz  *int            `json:"cgtviz"`
	Name    *string         `json:"name"`
	Devices *int            `json:"devices"`
	Config  json.RawMessage `json:"config"`
	Meta    json.RawMessage `json:"meta"`
}

var headerFields = []string{"cgtviz", "name", "devices", "config", "meta"}

func (r *Reader) parseHeader(line []byte) (Header, *Problem) {
	h := Header{Devices: 1, Config: DefaultConfig()}
	if len(bytes.TrimSpace(line)) == 0 {
		return h, r.problem(1, `line 1 is blank: it must be the header, e.g. {"cgtviz": 1}`)
	}
	var raw rawHeader
	keys, te, p := r.prepare(line, &raw)
	if p != nil {
		p.Msg = "header: " + p.Msg
		return h, p
	}
	for _, k := range keys {
		if k == "op" {
			return h, r.problem(1, `line 1 must be the header, e.g. {"cgtviz": 1}, not a record`)
		}
	}
	for _, k := range keys {
		if !slices.Contains(headerFields, k) {
			return h, r.problem(1, fmt.Sprintf("header: unknown field %q (header fields: cgtviz, name, devices, config, meta)", k))
		}
	}
	if te != nil {
		return h, r.problem(1, "header: "+typeMsg(te))
	}
	if raw.Cgtviz == nil {
		return h, r.problem(1, `header: missing "cgtviz" (the format version: this is version 1)`)
	}
	if *raw.Cgtviz != Version {
		return h, r.problem(1, fmt.Sprintf("header: unknown format version %d (this cgtviz reads version %d)", *raw.Cgtviz, Version))
	}
	h.Version = *raw.Cgtviz
	if raw.Name != nil {
		h.Name = *raw.Name
	}
	if raw.Devices != nil {
		if *raw.Devices < 1 || *raw.Devices > MaxDevices {
			return h, r.problem(1, fmt.Sprintf("header: devices is %d, want 1 to %d (MaxDevices)", *raw.Devices, MaxDevices))
		}
		h.Devices = *raw.Devices
	}
	if len(raw.Config) > 0 && !isNull(raw.Config) {
		var c rawConfig
		if msg := decodeStrict(raw.Config, &c, "config"); msg != "" {
			return h, r.problem(1, "header: config: "+msg+" (config keys: "+strings.Join(ConfigKeys, ", ")+")")
		}
		set, msg := c.apply(&h.Config)
		if msg != "" {
			return h, r.problem(1, "header: config: "+msg)
		}
		h.Config.Set = set
	}
	if len(raw.Meta) > 0 {
		if raw.Meta[0] != '{' {
			return h, r.problem(1, "header: meta: want an object, got "+jsonKind(kindOf(raw.Meta)))
		}
		h.Meta = append([]byte(nil), raw.Meta...)
	}
	return h, nil
}

// decodeStrict decodes the value of field (a JSON value taken from a valid
// line) into v, refusing unknown fields, and returns a message or "".
func decodeStrict(data []byte, v any, field string) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return ""
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("field %q: want %s, got %s", field, fieldWant[field], jsonKind(te.Value))
		}
		return typeMsg(te)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + rest
	}
	return msg
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// fieldWant says, for a field name, what a value of it must be.
var fieldWant = map[string]string{
	"op": "a string", "fn": "a name (a string)", "params": "a list of names", "body": "a list of statements",
	"returns": "a list of names", "mode": "a string", "name": "a name (a string)", "shape": "a list of ints",
	"init": "a string", "seed": "an integer", "values": "a list of numbers", "device": "an integer",
	"args": "a list of names", "out": "a list of names", "names": "a list of names", "text": "a string",
	"k": "a string", "a": "a name (a string)", "value": "a number", "action": "a string", "node": "an object",
	"nodes": "an integer", "roots": "an integer", "checkpoints": "an integer", "recordings": "an integer",
	"replays": "an integer", "warmups": "an integer", "live_blocks": "an integer", "tol": "a number",
	"parent_fn": "a name or null", "error": "a string or null", "cgtviz": "an integer", "devices": "an integer",
	"config": "an object", "meta": "an object", "warmup_runs": "an integer", "rerecord_limit": "an integer",
	"max_tensor_bytes": "an integer", "max_total_bytes": "an integer",
	// Added to version 1 (issue 13).
	"invocation": "an integer", "src": "an object {\"file\": ..., \"line\": ...}", "dtype": "a string", "of": "a name (a string)", "static": "a list of ints", "graph": "a name (a string)", "offset": "an integer", "strides": "a list of ints",
	"recompile_limit": "an integer", "automatic_dynamic_shapes": "true or false", "assume_static_by_default": "true or false",
	"support_input_mutation": "true or false", "skip_dynamic_graphs": "true or false", "dynamic_shape_warn_limit": "an integer",
	"inline_inbuilt_nn_modules": "true or false", "cudagraph_or_error": "true or false",
}

// typeMsg turns a json type error into `field "shape": want a list of ints, got a string`.
func typeMsg(te *json.UnmarshalTypeError) string {
	field := te.Field
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	want := fieldWant[field]
	if want == "" {
		want = "a " + te.Type.String()
	}
	got := jsonKind(te.Value)
	if n, ok := strings.CutPrefix(te.Value, "number "); ok {
		got = n
		if te.Type.Kind() >= reflect.Int && te.Type.Kind() <= reflect.Uint64 && !bytes.ContainsAny([]byte(n), ".eE") {
			got = n + ", which is out of range"
		}
	}
	return fmt.Sprintf("field %q: want %s, got %s", field, want, got)
}

// jsonKind names a JSON value kind as encoding/json reports it, for people.
func jsonKind(v string) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	case "null":
		return "null"
	}
	return v
}

// kindOf returns the encoding/json kind name of a raw JSON value.
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// formatBytes prints a byte count as people write limits: 4 GiB, 512 MiB.
func formatBytes(n int64) string {
	units := []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}
	for _, u := range units {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	for _, u := range units {
		if n >= u.size {
			return fmt.Sprintf("%d bytes (%.1f %s)", n, float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
