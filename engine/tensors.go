package engine

import (
	"fmt"
	"sort"

	"github.com/cgtviz/cgtviz/traces"
	"github.com/cgtviz/cgtviz/traces/ops"

	"github.com/cgtviz/cgtviz/engine/device"
)

// poolKind says which pool a storage's memory came from.
type poolKind uint8

const (
	poolNone    poolKind = iota // no memory (an empty tensor)
	poolDefault                 // the default (eager) pool
	poolGraph                   // the tree's private graph pool
)

func (p poolKind) String() string {
	switch p {
	case poolDefault:
		return "default"
	case poolGraph:
		return "graph"
	}
	return "none"
}

// Storage is a block of device memory that tensors view, PyTorch's
// StorageImpl. Liveness is tracked here, as the tree manager tracks it (its
// weak references are to storages): a storage is live while a live tensor
// views it.
type Storage struct {
	ID    int
	Dev   int
	Ptr   device.Ptr
	Bytes int64
	Pool  poolKind
	// Owned is true when the storage's death frees its block (a normal
	// allocator tensor). Replay outputs own nothing (PyTorch builds them
	// with no deleter); a checkpoint gives live ones a deleter again.
	Owned bool
	// Param marks a static tensor's storage (param records).
	Param bool
	// Stale is set when the tree deallocated the storage at the end of a
	// generation: its block was freed and any data access raises (with
	// the message of shared.staleErr, which names Line and What).
	Stale bool
	// StaleLine and StaleFn are the call that freed it when Stale: the
	// line of the call whose new generation deallocated it, and its
	// function (for the error's "which call overwrote it").
	StaleLine int
	StaleFn   string
	// StaleGrad: a backward handed it out (a gradient, kept as .grad):
	// the error names gradient accumulation across a mark_step.
	StaleGrad bool
	// Src is the user's source line of the record that made it, when the
	// trace carries one (traces.Record.Src): PyTorch's errors name it.
	Src *traces.Source
	// Refs counts live tensors viewing the storage.
	Refs int
	// Pins counts node caches holding a tensor on this storage (cached
	// and static outputs): the storage object survives its death so the
	// same object can be returned again, as PyTorch's cached tensors are.
	Pins int
	// Line and What say where the storage was made, for the "stack trace"
	// of the overwritten error and the pool view.
	Line int
	What string
	// kept is the journal epoch in which the record's rollback saved
	// the storage (tableJournal).
	kept uint64
}

// Tensor is a tensor object the trace can name. Every tensor views the
// whole of its storage (version 1 has no slicing), so views differ only in
// shape.
type Tensor struct {
	ID      int
	Storage int
	Shape   []int
	// Names counts the names bound to it; holds counts transient owners
	// (results of a call before they are bound, arguments during a call).
	Names int
	holds int
	// Cached marks a tensor held by a node's cache (cached output, static
	// output): the object survives death and may be returned again.
	Cached bool
	// deadName is the name a cached tensor last died under (its last
	// name's del), for a saved record that names it again (saved.go).
	deadName string
	// Tracked marks an output object of a warmup or a recording: it is in
	// its node's tensor_weakrefs, so a dealloc marks the object itself (any
	// use raises), while other objects on a freed storage (replay outputs,
	// views made later) are marked through the storage only (a use that
	// touches no data, such as a view, still works).
	Tracked bool
	// DType is the element type; only float32 values are computed (the
	// others are sized right and hold undefined values: see modelsValues).
	DType ops.DType
	// Offset is the view's storage offset in bytes (storage_offset() x
	// element_size()): its data pointer is the storage's plus Offset.
	// Strides are its strides in elements, nil when contiguous.
	Offset  int64
	Strides []int64
	Line    int
	What    string
	kept    uint64 // as Storage.kept
}

// dataPtr is t.data_ptr(): where its first element is.
func (tt *tensorTable) dataPtr(t *Tensor) device.Ptr {
	s := tt.storages.get(t.Storage)
	if s == nil || s.Ptr == 0 {
		return 0
	}
	return s.Ptr + device.Ptr(t.Offset)
}

// extentBytes is the bytes a tensor spans from its data pointer: what
// torch.empty_strided of its size and strides takes (a placeholder).
func (t *Tensor) extentBytes() int64 {
	if t.Strides == nil {
		return bytesOf(t.Shape, t.DType)
	}
	n, err := ops.ViewExtent(t.Shape, t.Strides, 0)
	if err != nil {
		return bytesOf(t.Shape, t.DType)
	}
	return n * int64(t.DType.Size())
}

func (t *Tensor) live() bool { return t.Names > 0 || t.holds > 0 }

// numElems returns the element count of a shape.
func numElems(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// bytesOf returns the bytes of a tensor of a shape and dtype (numel times
// element_size(), what PyTorch's allocator is asked for).
func bytesOf(shape []int, dt ops.DType) int64 { return numElems(shape) * int64(dt.Size()) }

// words is how many float32 words hold n bytes: the element count of a
// device copy or fill over a storage of any dtype. The caching allocator
// rounds every block up to 512 bytes, so the last partial word lies in the
// block.
func words(n int64) int64 { return (n + 3) / 4 }

// tensorTable holds the engine's tensors, storages and names, with Python's
// reference semantics: a tensor dies when nothing holds it, a storage when
// no live tensor views it.
type tensorTable struct {
	// tensors and storages by ID (idtable.go).
	tensors  idTable[Tensor]
	storages idTable[Storage]
	names    map[string]int // name -> tensor id
	nextT    int
	nextS    int
	// onStorageDeath is called when a storage's last live tensor dies.
	onStorageDeath func(s *Storage) error
	j              tableJournal
}

// tableJournal is the undo log of the tensor table for one record's
// rollback (Engine.saveLight begins it, at the start of every record,
// and commits the last one's): the first value, in the record,
// of each tensor and storage that existed before it, and the old value of
// each map entry it writes. A record's rollback then costs what the record
// changed; a copy of the table cost as much as the tree's cached outputs
// (ten thousand at ten thousand nodes), at every record that ends a path.
// Objects made in the record (an ID above the one the journal began at)
// need no saving: the maps' undo drops them. Every write to a field of a
// table object is preceded by keepT or keepS; writes to the maps go
// through the table's methods.
type tableJournal struct {
	on bool
	// epoch numbers the journals: an object whose kept is epoch has its
	// first value saved already.
	epoch        uint64
	nextT, nextS int
	tensors      []tensorSave
	storages     []storageSave
	maps         []mapUndo
}

type tensorSave struct {
	p *Tensor
	v Tensor
}

type storageSave struct {
	p *Storage
	v Storage
}

// mapUndo is one write to the tensors, the storages (idTable) or the
// names of the table, with what the key held before (had false: nothing).
type mapUndo struct {
	kind mapKind
	had  bool
	id   int // the key of tensors and storages, the old value of names
	name string
	t    *Tensor
	s    *Storage
}

type mapKind uint8

const (
	mapTensors mapKind = iota
	mapStorages
	mapNames
)

// begin starts the journal of a record; the table is as the rollback
// will put it back.
func (tt *tensorTable) begin() {
	tt.commit()
	j := &tt.j
	j.on = true
	j.epoch++
	j.nextT, j.nextS = tt.nextT, tt.nextS
}

// commit ends the journal: the record's changes stay.
func (tt *tensorTable) commit() {
	j := &tt.j
	j.on = false
	// The slices are reused by the next record. A big record's entries
	// are cleared, so that they do not pin its objects; a small one's
	// (a replay's handful) are left to be overwritten: clearing memory
	// that holds pointers costs write barriers on every record.
	const pinned = 64
	if len(j.tensors) > pinned {
		clear(j.tensors)
	}
	if len(j.storages) > pinned {
		clear(j.storages)
	}
	if len(j.maps) > pinned {
		clear(j.maps)
	}
	j.tensors, j.storages, j.maps = j.tensors[:0], j.storages[:0], j.maps[:0]
}

// undo puts the table back as it was at begin and ends the journal.
func (tt *tensorTable) undo() {
	j := &tt.j
	if !j.on {
		return
	}
	for i := len(j.maps) - 1; i >= 0; i-- {
		u := &j.maps[i]
		switch u.kind {
		case mapTensors:
			if u.had {
				tt.tensors.set(u.id, u.t)
			} else {
				tt.tensors.del(u.id)
			}
		case mapStorages:
			if u.had {
				tt.storages.set(u.id, u.s)
			} else {
				tt.storages.del(u.id)
			}
		case mapNames:
			if u.had {
				tt.names[u.name] = u.id
			} else {
				delete(tt.names, u.name)
			}
		}
	}
	for i := len(j.tensors) - 1; i >= 0; i-- {
		*j.tensors[i].p = j.tensors[i].v
	}
	for i := len(j.storages) - 1; i >= 0; i-- {
		*j.storages[i].p = j.storages[i].v
	}
	tt.nextT, tt.nextS = j.nextT, j.nextS
	tt.commit()
}

// keepT saves t's value, once per journal, before the record changes it.
func (tt *tensorTable) keepT(t *Tensor) {
	j := &tt.j
	if !j.on || t.ID > j.nextT || t.kept == j.epoch {
		return
	}
	j.tensors = append(j.tensors, tensorSave{t, *t})
	t.kept = j.epoch
}

// keepS saves s's value, once per journal, before the record changes it.
func (tt *tensorTable) keepS(s *Storage) {
	j := &tt.j
	if !j.on || s.ID > j.nextS || s.kept == j.epoch {
		return
	}
	j.storages = append(j.storages, storageSave{s, *s})
	s.kept = j.epoch
}

func (tt *tensorTable) setTensor(t *Tensor) {
	if tt.j.on {
		old := tt.tensors.get(t.ID)
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapTensors, id: t.ID, had: old != nil, t: old})
	}
	tt.tensors.set(t.ID, t)
}

// dropTensor deletes tensor id from the table (the object lives on where
// something holds it).
func (tt *tensorTable) dropTensor(id int) {
	old := tt.tensors.get(id)
	if old == nil {
		return
	}
	if tt.j.on {
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapTensors, id: id, had: true, t: old})
	}
	tt.tensors.del(id)
}

func (tt *tensorTable) setStorage(s *Storage) {
	if tt.j.on {
		old := tt.storages.get(s.ID)
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapStorages, id: s.ID, had: old != nil, s: old})
	}
	tt.storages.set(s.ID, s)
}

// dropStorage deletes storage id from the table.
func (tt *tensorTable) dropStorage(id int) {
	old := tt.storages.get(id)
	if old == nil {
		return
	}
	if tt.j.on {
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapStorages, id: id, had: true, s: old})
	}
	tt.storages.del(id)
}

// setName binds name to id; old and had are what it held (the caller
// looked them up already: bind is on every call's path).
func (tt *tensorTable) setName(name string, id, old int, had bool) {
	if tt.j.on {
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapNames, name: name, had: had, id: old})
	}
	tt.names[name] = id
}

func (tt *tensorTable) dropName(name string) {
	old, had := tt.names[name]
	if !had {
		return
	}
	if tt.j.on {
		tt.j.maps = append(tt.j.maps, mapUndo{kind: mapNames, name: name, had: true, id: old})
	}
	delete(tt.names, name)
}

func newTensorTable() *tensorTable {
	return &tensorTable{
		names: map[string]int{},
	}
}

func (tt *tensorTable) clone() *tensorTable {
	c := &tensorTable{
		names: make(map[string]int, len(tt.names)),
		nextT: tt.nextT,
		nextS: tt.nextS,
	}
	// The clone's journals go on from this one's epoch, so that no stamp
	// its objects copied counts as saved in its next journal.
	c.j.epoch = tt.j.epoch
	for id, t := range tt.tensors.all() {
		nt := *t
		nt.Shape = append([]int(nil), t.Shape...)
		c.tensors.set(id, &nt)
	}
	for id, s := range tt.storages.all() {
		ns := *s
		c.storages.set(id, &ns)
	}
	for n, id := range tt.names {
		c.names[n] = id
	}
	return c
}

func (tt *tensorTable) newStorage(s Storage) *Storage {
	tt.nextS++
	s.ID = tt.nextS
	p := &s
	tt.setStorage(p)
	return p
}

// newTensor makes a tensor on storage st, held once (by the caller). It
// keeps shape, not a copy: a Tensor's Shape is never written in place
// (nor appended to), and the callers pass shapes that no one writes, a
// plan's, a node output's or another tensor's (a record's, whose buffer
// a reader may reuse, is copied first). A copy was one of a node's ~108
// allocations at each of its tensors, and a shape shared is a few bytes
// less live a tensor.
func (tt *tensorTable) newTensor(st *Storage, shape []int, line int, what string) *Tensor {
	tt.nextT++
	if len(shape) == 0 {
		shape = nil // a scalar's, as a copy by append made it
	}
	t := &Tensor{ID: tt.nextT, Storage: st.ID, Shape: shape, Line: line, What: what, holds: 1}
	tt.setTensor(t)
	tt.keepS(st)
	st.Refs++
	return t
}

// storageLive reports whether storage id is alive.
func (tt *tensorTable) storageLive(id int) bool {
	s := tt.storages.get(id)
	// PyTorch's is_live also compares the storage's data pointer with the
	// recorded one: a storage the tree deallocated (Stale) points at
	// nothing, so it is dead to the path even while a tensor holds it.
	return s != nil && s.Refs > 0 && !s.Stale
}

// hold adds a transient owner to t, reviving it (and its storage) if it was
// a dead cached tensor being returned again.
func (tt *tensorTable) hold(t *Tensor) {
	tt.keepT(t)
	if !t.live() {
		if s := tt.storages.get(t.Storage); s != nil {
			tt.keepS(s)
			s.Refs++
		}
		// A dead tensor being returned again (a cached output) goes
		// back into the table; a live one is in it already, and the
		// replay path holds every argument: no map write for those.
		tt.setTensor(t)
	}
	t.holds++
}

// release drops a transient owner.
func (tt *tensorTable) release(t *Tensor) error {
	tt.keepT(t)
	t.holds--
	return tt.maybeDie(t)
}

func (tt *tensorTable) maybeDie(t *Tensor) error {
	if t.live() {
		return nil
	}
	if !t.Cached {
		tt.dropTensor(t.ID)
	}
	s := tt.storages.get(t.Storage)
	if s == nil {
		return nil
	}
	tt.keepS(s)
	s.Refs--
	if s.Refs > 0 {
		return nil
	}
	var err error
	if tt.onStorageDeath != nil {
		err = tt.onStorageDeath(s)
	}
	if s.Pins == 0 {
		tt.dropStorage(s.ID)
	}
	return err
}

// bind binds name to t (t must be held by the caller), dropping what the
// name held before, after the new tensor exists (Python's x = f(x)).
func (tt *tensorTable) bind(name string, t *Tensor) error {
	if name == "_" || name == "" {
		return nil
	}
	old, had := tt.names[name]
	tt.keepT(t)
	t.Names++
	tt.setName(name, t.ID, old, had)
	if had {
		if ot := tt.tensors.get(old); ot != nil {
			tt.keepT(ot)
			ot.Names--
			return tt.maybeDie(ot)
		}
	}
	return nil
}

// unbind deletes a name (Python's del).
func (tt *tensorTable) unbind(name string) error {
	id, ok := tt.names[name]
	if !ok {
		return fmt.Errorf("name %q is not bound", name)
	}
	tt.dropName(name)
	if t := tt.tensors.get(id); t != nil {
		tt.keepT(t)
		t.Names--
		return tt.maybeDie(t)
	}
	return nil
}

// lookup returns the tensor bound to name.
func (tt *tensorTable) lookup(name string) (*Tensor, *Storage, error) {
	id, ok := tt.names[name]
	if !ok {
		return nil, nil, fmt.Errorf("name %q is not bound", name)
	}
	t := tt.tensors.get(id)
	if t == nil {
		return nil, nil, fmt.Errorf("name %q: tensor %d is gone", name, id)
	}
	return t, tt.storages.get(t.Storage), nil
}

// namesOf returns the sorted names bound to tensors viewing storage id.
func (tt *tensorTable) namesOfStorage(id int) []string {
	var out []string
	for n, tid := range tt.names {
		if t := tt.tensors.get(tid); t != nil && t.Storage == id {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// nameOfStorage returns one name of the tensor viewing storage id, for
// messages: the first of namesOfStorage, the least, found without the
// list (a dealloc names every freed output of a generation).
func (tt *tensorTable) nameOfStorage(id int) string {
	least, found := "", false
	for n, tid := range tt.names {
		if found && n >= least {
			continue
		}
		if t := tt.tensors.get(tid); t != nil && t.Storage == id {
			least, found = n, true
		}
	}
	return least
}
