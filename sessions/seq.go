package sessions

// seqChunkBits sets the records a chunk of a seq holds: 16,384, a few
// hundred iterations of a training loop, whose period a chunk finds.
const seqChunkBits = 14

const (
	seqChunk = 1 << seqChunkBits
	seqMask  = seqChunk - 1
)

// Seq is an append-only sequence that stores a long run of repetition in
// next to nothing: what a trace's records did, one value a record, repeats
// with the period of the program's loop (a step, the calls of one
// iteration, their dels), however long it runs. Every full chunk of
// seqChunk values is stored by its smallest period, when that is at most
// half of it: a replay a step costs a few bytes a chunk, where one value
// a record cost 4 bytes a record (200 MB at 50M records). A chunk with no
// such period (a tree growing, a recompile) is kept whole. At(i) stays a
// few indexed reads. The zero value is empty and ready.
type Seq[T comparable] struct {
	// chunks are the full chunks, each its values or, repeating, its
	// first period: the value of offset j is c[j%len(c)].
	chunks [][]T
	tail   []T // the chunk being filled
	// scratch is the prefix function's table, kept between chunks.
	scratch []int32
}

// Len is how many values were pushed.
func (q *Seq[T]) Len() int { return len(q.chunks)<<seqChunkBits + len(q.tail) }

// At returns value i (0 <= i < Len).
func (q *Seq[T]) At(i int) T {
	c := i >> seqChunkBits
	if c == len(q.chunks) {
		return q.tail[i&seqMask]
	}
	ch := q.chunks[c]
	return ch[(i&seqMask)%len(ch)]
}

// Skim calls f with the values of [lo, hi) in order, but for those that
// an earlier value of the range is known to repeat (a repeating chunk's
// past its first period in the range): every value of the range is seen,
// and at its first index, so that a maximum and where it first is, or
// whether a value is there, cost a period a chunk, not a chunk.
func (q *Seq[T]) Skim(lo, hi int, f func(i int, v T)) {
	hi = min(hi, q.Len())
	for i := max(lo, 0); i < hi; {
		c := i >> seqChunkBits
		end := min(hi, (c+1)<<seqChunkBits)
		if c == len(q.chunks) {
			for ; i < end; i++ {
				f(i, q.tail[i&seqMask])
			}
			break
		}
		ch := q.chunks[c]
		if len(ch) == seqChunk {
			for ; i < end; i++ {
				f(i, ch[i&seqMask])
			}
			continue
		}
		for j, k := i, (i&seqMask)%len(ch); j < min(end, i+len(ch)); j++ {
			f(j, ch[k])
			if k++; k == len(ch) {
				k = 0
			}
		}
		i = end
	}
}

// Each calls f with every value of [lo, hi) in order: At for a range,
// without At's index arithmetic per value.
func (q *Seq[T]) Each(lo, hi int, f func(i int, v T)) {
	hi = min(hi, q.Len())
	for i := max(lo, 0); i < hi; {
		c := i >> seqChunkBits
		end := min(hi, (c+1)<<seqChunkBits)
		ch := q.tail
		if c < len(q.chunks) {
			ch = q.chunks[c]
		}
		for k := (i & seqMask) % max(len(ch), 1); i < end; i++ {
			f(i, ch[k])
			if k++; k == len(ch) {
				k = 0
			}
		}
	}
}

// Push appends v.
func (q *Seq[T]) Push(v T) {
	if q.tail == nil {
		q.tail = make([]T, 0, seqChunk)
	}
	q.tail = append(q.tail, v)
	if len(q.tail) == seqChunk {
		q.chunks = append(q.chunks, q.compact(q.tail))
		q.tail = q.tail[:0]
	}
}

// Bytes is about what the values take: the chunks as stored, the tail
// whole.
func (q *Seq[T]) Bytes(size int) int64 {
	n := int64(cap(q.tail))
	for _, c := range q.chunks {
		n += int64(len(c))
	}
	return n * int64(size)
}

// compact returns a full chunk as stored: its first period when the
// chunk repeats with a period of at most half of it, else a copy.
func (q *Seq[T]) compact(vs []T) []T {
	if p := q.period(vs); p <= len(vs)/2 {
		return append([]T(nil), vs[:p]...)
	}
	return append([]T(nil), vs...)
}

// period is the smallest p such that vs[j] == vs[j-p] for every j >= p:
// len(vs) less its longest border, from Knuth-Morris-Pratt's prefix
// function (linear in len(vs)).
func (q *Seq[T]) period(vs []T) int {
	if cap(q.scratch) < len(vs) {
		q.scratch = make([]int32, len(vs))
	}
	pi := q.scratch[:len(vs)]
	pi[0] = 0
	for i := 1; i < len(vs); i++ {
		k := pi[i-1]
		for k > 0 && vs[i] != vs[k] {
			k = pi[k-1]
		}
		if vs[i] == vs[k] {
			k++
		}
		pi[i] = k
	}
	return len(vs) - int(pi[len(vs)-1])
}
