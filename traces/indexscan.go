package traces

import (
	"bytes"
	"fmt"
	"sort"
)

// scanChunk is how many bytes Scan reads at once: one read(2) for
// thousands of records, where Record makes one a record.
const scanChunk = 1 << 20

// Scan parses records [from, to) in order (to is clamped to Len), reading
// the file in large sequential chunks, and calls each with every record
// and its problem, as Record returns them; each returns false to stop.
// The record is valid only during the call (one variable serves the
// scan): each copies what it keeps.
// It is for a long run forward (a first long move in the TUI), where
// Record's read per record costs more than the engine. Scanned records
// do not enter Record's cache. Scan may run beside Record and the
// background pass.
func (ix *Index) Scan(from, to int, each func(i int, rec *Record, err error) bool) error {
	rd := &Reader{file: ix.file, hdr: ix.hdr, maxRecords: MaxRecords}
	var rec Record
	// A loop's records repeat line for line: as Reader.Next, the scan
	// parses a short line once and hands out copies (records are
	// read-only, their slices shared). A config record changes what a
	// line parses to, so the memo starts again at one.
	memo := map[string]Record{}
	memoCfg := -1 // the config the memo's records were parsed under (its index)
	// One set of buffers serves every chunk: a set a chunk cost more of
	// the collector's time than the parsing it served (its configs alone
	// were 70 bytes a record), and the collector's time is the engine's
	// beside it.
	var (
		ends  []int64
		lines []int
		cfgs  []Config
		cfgN  []int // which config: how many came before
		buf   []byte
	)
	for i := max(from, 0); ; {
		ix.mu.Lock()
		to = min(to, ix.rel.n)
		if i >= to {
			ix.mu.Unlock()
			return nil
		}
		// Records [i, j) fit in one chunk (at least one record).
		start := ix.offLocked(i)
		j := i + 1
		for j < to && ix.offLocked(j)-start < scanChunk {
			j++
		}
		ends, lines, cfgs, cfgN = ends[:0], lines[:0], cfgs[:0], cfgN[:0]
		c := sort.Search(len(ix.cfgs), func(c int) bool { return ix.cfgs[c].rec >= i })
		cfg := ix.hdr.Config
		if c > 0 {
			cfg = ix.cfgs[c-1].cfg
		}
		for k := i; k < j; k++ {
			for c < len(ix.cfgs) && ix.cfgs[c].rec < k {
				cfg = ix.cfgs[c].cfg
				c++
			}
			end := ix.end
			if k+1 < ix.rel.n {
				end = ix.offLocked(k + 1)
			}
			ends = append(ends, end)
			lines = append(lines, ix.lineLocked(k))
			cfgs = append(cfgs, cfg)
			cfgN = append(cfgN, c)
		}
		ix.mu.Unlock()

		if n := int(ends[len(ends)-1] - start); n <= cap(buf) {
			buf = buf[:n]
		} else {
			buf = make([]byte, n)
		}
		if n, err := ix.f.ReadAt(buf, start); n < len(buf) {
			return &Problem{File: ix.file, Line: lines[0], Msg: fmt.Sprintf("read error: %d of %d bytes at offset %d: %v", n, len(buf), start, err)}
		}
		at := start
		for k := i; k < j; k++ {
			e := ends[k-i]
			text := trimEOL(buf[at-start : e-start])
			at = e
			if b := bytes.LastIndexByte(text, '\n'); b >= 0 {
				text = text[b+1:] // the blank lines before the record
			}
			text = trimEOL(text)
			line := lines[k-i]
			var err error
			if len(text) > MaxLineBytes {
				rec, err = Record{Line: line}, &Problem{File: ix.file, Line: line, Msg: fmt.Sprintf("line is longer than %s (MaxLineBytes)", formatBytes(MaxLineBytes))}
			} else if m, ok := memo[string(text)]; ok && cfgN[k-i] == memoCfg {
				rec = m
				rec.Line = line
			} else {
				// One Reader for the scan: its scanner's buffers serve
				// every record (a Reader a record allocated them anew).
				rd.line, rd.cfg = line, cfgs[k-i]
				var p *Problem
				rec, p = rd.parseRecord(text)
				rec.Line = line
				if p != nil {
					err = p
				} else if len(text) <= memoLineBytes && rec.Op != OpDef && rec.Op != OpConfig {
					if len(memo) >= memoLines || cfgN[k-i] != memoCfg {
						clear(memo)
						memoCfg = cfgN[k-i]
					}
					memo[string(text)] = rec
				}
			}
			if !each(k, &rec, err) {
				return nil
			}
		}
		i = j
	}
}
