"""The recording session, free of torch: what the recorder learnt of each
tensor (Fact) and function (FnInfo), the names the trace gives them, their
liveness, and the records of each call, written to a Trace. The tests
drive it with fake tensors."""

import itertools
import math
import operator
import re
import types
import weakref

from .jsonl import _STEP, SMALL_TENSOR, encode_record, _names_json
from .liveness import _cached_output
from .shapes import OutSpec, extent, fit_shape, is_contiguous, numel, sanitize, synth_def, view_fields

_ENTRY_NAME = operator.attrgetter("name")
_FACT_OF = operator.attrgetter("fact")
_OBJ_REF_OF = operator.attrgetter("obj_ref")
_PTR_OF = operator.attrgetter("ptr")
# An input position no entry named (_FnState.last_entries): it names no
# object (its reference gives None), so it matches no input.
_NO_ENTRY = types.SimpleNamespace(name=None, fact=types.SimpleNamespace(obj_ref=lambda: None, ptr=None))
_NAME_OR_NONE = (str, type(None))


def _fact_positions(facts):
    """The positions of the Facts among names (str) and Nones, in order, by
    C-level passes (a model's inputs are mostly named parameters)."""
    return list(itertools.compress(range(len(facts)),
                                   map(operator.not_, map(isinstance, facts, itertools.repeat(_NAME_OR_NONE)))))


class Fact:
    """What the recorder learnt about one input or output tensor, without
    holding it: a weak reference to the object, a liveness probe mirroring
    the tree's own (storage alive, the tree's cached reference discounted),
    and the keys that say when two Python objects are the same tensor."""

    __slots__ = ("shape", "device", "obj_ref", "storage", "offset", "stride",
                 "alive", "read_values", "probe", "dtype", "storage_numel", "base", "held",
                 "view_key", "ptr")

    def __init__(self, shape, device, obj_ref, storage, offset, stride, alive,
                 read_values=None, dtype="float32", storage_numel=None, base=None):
        self.shape = list(shape)
        self.device = device
        self.obj_ref = obj_ref  # callable -> the object or None
        self.storage = storage  # identity of the storage (int)
        self.offset = offset
        self.stride = tuple(stride)
        self.alive = alive  # callable -> bool
        self.read_values = read_values  # callable -> list[float] or None
        self.probe = None  # the torch side's liveness probe, if any
        self.dtype = dtype or "float32"
        # Elements of this dtype the storage holds (None: unknown, taken to
        # be exactly what the view reaches).
        self.storage_numel = storage_numel
        # callable -> the Fact of the tensor this one is a view of (PyTorch's
        # tensor._base), or None.
        self.base = base
        # True when alive() is True for as long as obj_ref() is not None (the
        # torch side's probes without a tree wrapper): such names are not
        # polled until their object dies.
        self.held = False
        # The tensor's data_ptr() when the Fact was made (None: unknown): an
        # object whose data pointer moved (`param.data = new`) is a new
        # tensor under the same Python object.
        self.ptr = None
        # What says two objects are one view of one storage; a Fact is never
        # changed once made, so it is built once (the hot path asks it for
        # every output at least three times).
        self.view_key = (storage, offset, tuple(self.shape), self.stride)


class FnInfo:
    """A FunctionID as the tree manager knows it."""

    __slots__ = ("key", "base", "mode", "static", "mutated", "placeholders", "device")

    def __init__(self, key, base, mode, static=(), mutated=(), placeholders=(), device=0):
        self.key = key
        self.base = base
        self.mode = mode
        self.static = set(static)
        self.mutated = tuple(mutated)
        self.placeholders = list(placeholders)
        self.device = device


class _Entry:
    __slots__ = ("name", "fact", "kind", "order", "obj_id", "wr", "in_memo")

    def __init__(self, name, fact, kind, order):
        self.name, self.fact, self.kind, self.order = name, fact, kind, order
        self.in_memo = False  # an input of some function's memo (Recorder._before_call)
        self.obj_id = None  # id() of the object by_obj maps to this name
        self.wr = None  # the weakref whose callback says the object died (held facts)


class _FnState:
    __slots__ = ("name", "info", "params", "shapes", "dtypes", "views", "defined", "calls",
                 "out_pos", "out_dense", "warned_extra", "last_args", "memo", "tensor_idx", "plan",
                 "last_entries")

    def __init__(self, name, info):
        self.name, self.info = name, info
        self.out_pos = []  # output positions the def returns (tensors at the first call)
        self.out_dense = False  # out_pos is every position of the first call's outputs
        self.warned_extra = False
        self.params, self.shapes = None, None
        self.tensor_idx = None  # the input index of each param (tensor inputs only)
        self.dtypes, self.views = None, None
        self.defined = False
        self.calls = 0
        self.last_args = None  # the args list of the last call begin_known_call made
        # The torch side's memo of the last call's inputs, when all were
        # named tensors: (their weak references, their entries).
        self.memo = None
        # The torch side's _ReplayPlan: what the last call, a replay, left
        # behind, for the next one to take the short path (or None).
        self.plan = None
        # The torch side's entries that named the last call's inputs through
        # Recorder._before_call's general path, by position (_NO_ENTRY where
        # none did): where the next call looks first (or None).
        self.last_entries = None


class _ReplayPlan:
    """What a steady replay of a function leaves for the next call of it
    (Recorder._fast_after): the node it replayed, PyTorch's decision about
    it (its expect record, shared), and the entries of its outputs (the
    node's cached tensors, renamed at every replay), with the names they
    have now. The next call takes the short path only when all of it
    still holds; otherwise the general one runs, as if there were no plan.

    `head` is the call line up to its first output name ('{"op": "call",
    "fn": ..., "args": [...], "out": ["'), made once, when the function's
    name and the args are names json.dumps writes as they are (None
    otherwise: the call is then a record like any other)."""

    __slots__ = ("node_ref", "node_keys", "ckpt", "dev", "ekey", "expect", "entries", "names",
                 "prefix", "suffixes", "fn_json", "args", "argset", "head", "dev_key", "serial",
                 "nin", "in_refs", "in_ptrs", "in_idx", "nout", "out_refs", "wrappers", "polled",
                 "fs", "uses", "cfg", "expect_line")

    def __init__(self, node, node_keys, ckpt, dev, ekey, expect, entries, names, fn, args):
        self.node_ref = weakref.ref(node)  # weak: a plan never keeps a graph alive
        self.node_keys, self.ckpt, self.dev = node_keys, ckpt, dev
        self.dev_key = str(dev)  # Recorder._trees' key
        self.ekey, self.expect = ekey, expect
        self.expect_line = None  # its line, once a deferred replay wrote it (exp_line)
        self.entries = entries  # tuple of _Entry, by output position
        self.names = names  # tuple of their names after the last call
        self.prefix = fn + "_c"
        self.suffixes = tuple("_%d" % i for i in range(len(entries)))
        fj = _names_json([fn])
        self.fn_json = fj[1:-1] if fj is not None else None  # None: the names are no template's
        self.args = self.head = None
        # Recorder._serial when the plan was last found to hold for a
        # deferred replay (Recorder._steady_holds); None: not yet. The
        # rest is what it found, for the deferred call to compare: the
        # memo's inputs (count, weak references, data pointers), the
        # outputs' (count, weak references, the tree's wrappers), and the
        # wrappers of the polled names when they are the outputs' alone.
        self.serial = None
        self.nin = self.in_refs = self.in_ptrs = self.in_idx = None
        self.nout = self.out_refs = self.wrappers = self.polled = None
        self.fs = None  # the function's _FnState
        # Whether a polled output's tree check counts c10's own reference
        # (2.11's: _refcount_rule's USE_COUNT): the poll reads _use_count().
        self.uses = False
        self.cfg = None  # the count of config writes (Recorder._count_config_writes) it was checked at
        self.set_args(args)

    def exp_line(self):
        """The expect record's line, encoded once for all the deferred
        replays of the plan (the record itself if the encoder refuses it:
        the writer drops it then, with a note, as it drops any record)."""
        if self.expect_line is None:
            try:
                self.expect_line = encode_record(self.expect)
            except (ValueError, TypeError):
                self.expect_line = self.expect
        return self.expect_line

    def set_args(self, args):
        """The call line's head for this args list (a loop's calls share one)."""
        self.args = args
        self.argset = frozenset(args)
        aj = _names_json(args) if self.fn_json is not None else None
        self.head = (None if aj is None else
                     '{"op": "call", "fn": ' + self.fn_json + ', "args": ' + aj + ', "out": ["')


def _known_name(e, obj):
    """e's name when e (an entry found by id) is bound to this very object."""
    if e is None:
        return None
    ref = e.fact.obj_ref
    return e.name if ref is not None and ref() is obj else None


class Session:
    """Turns tree events into trace records. The torch side (Recorder) gives
    it Facts; it owns names, liveness bookkeeping and record order:

      dels of names that died, new tensors for unseen inputs, the call,
      its expect, then dels of names a call made redundant.

    A name dies when its Fact's probe says so (the torch side mirrors the
    tree's own liveness checks); deaths are polled at every event, so each
    `del` lands before the first record that could see it."""

    def __init__(self, trace):
        self.trace = trace
        self.entries = {}  # name -> _Entry, live names only
        self.by_obj = {}  # id(obj) -> name
        self.by_obj_entry = {}  # id(obj) -> entry (what by_obj names), for the hot path
        self.by_storage = {}  # storage identity -> {name: entry} of the live names over it
        self.by_view = {}  # view key -> name
        self.fns = {}  # FnInfo.key -> _FnState
        self.out_storage = {}  # storage identity -> a live name of a tree output over it
        self._watch = {}  # name -> entry, for names polled at every event
        # id(weakref) -> name, for names alive while their object is. Keyed
        # by id: a weakref hashes and compares as its live object does, and
        # two names of one tensor (a parameter a forward returns) would
        # make the dict compare tensors with ==, which raises in torch.
        self._held_wr = {}
        # (weakref, clock() then) of the objects that died since the last
        # poll: the clock, the torch side's step counter, says which step
        # each death came after (steps are written late: _catch_up_steps).
        self._dead_objs = []
        self.clock = None  # callable -> the step counter now; None: 0
        # view key -> the entry of a replay's cached output that died to the
        # tree (its last Python reference went) while autograd may keep it
        # for a backward: a later input that is that very object is written
        # as a `saved` record of it (_saved_name).
        self._dead_cached = {}
        self._argset = None  # (an args list, the set of its names), for _flush_dead
        self.fn_names = set()
        self.names_used = set()
        self._fresh_next = {}  # base -> the suffix _fresh tries first
        self._expects = {}
        self._swapped = []  # names whose object took other data (lookup), to del after its new record  # (action, node, checkpoints, device) -> its expect record
        self.order = 0
        # Moves whenever a name is bound or unbound, or an entry a memo of
        # inputs holds is renamed: a memo made at the same epoch is true.
        self.epoch = 0
        self.seed = 0
        self.counts = {"calls": 0, "warmup": 0, "record": 0, "replay": 0, "eager": 0,
                       "errors": 0, "steps": 0, "dels": 0, "tensors": 0, "params": 0, "reads": 0}

    # -- names

    def _fresh(self, base):
        # The first of base, base_1, base_2, ... not taken. Names are never
        # given back, so the search resumes where the last one for this base
        # ended: a loop's fresh input per call ("in", "in_1", ...) costs one
        # probe, not one per earlier call.
        n = self._fresh_next.get(base, 0)
        name = "%s_%d" % (base, n) if n else base
        while name in self.names_used:
            n += 1
            name = "%s_%d" % (base, n)
        self.names_used.add(name)
        self._fresh_next[base] = n + 1
        return name

    def _replay_names(self, plan, calls):
        """The names of a replay's outputs as end_call gives them (function,
        call number, position), each taken (_fresh only when a tensor has
        it already), for a _ReplayPlan's outputs."""
        used = self.names_used
        cs = str(calls)
        outs = []
        for sfx in plan.suffixes:
            n = plan.prefix + cs + sfx
            if n in used:
                n = self._fresh(n)
            else:
                used.add(n)
            outs.append(n)
        return outs

    def _bind(self, name, fact, kind, takeover=True):
        """Names a tensor. With takeover, later lookups of this object and
        view find this name; without, the name is a passing alias and the
        older name keeps representing the tensor."""
        self.order += 1
        self.epoch += 1
        e = _Entry(name, fact, kind, self.order)
        self.entries[name] = e
        self.by_storage.setdefault(fact.storage, {})[name] = e
        if kind == "out":
            self.out_storage.setdefault(fact.storage, name)
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if takeover:
            if obj is not None:
                self.by_obj[id(obj)] = name
                self.by_obj_entry[id(obj)] = e
                e.obj_id = id(obj)
            self.by_view[fact.view_key] = name
        if fact.held and obj is not None:
            # Alive for sure while its object is: polled only once a
            # weakref callback says the object died.
            e.wr = weakref.ref(obj, self._died)
            self._held_wr[id(e.wr)] = name
        else:
            self._watch[name] = e
        return e

    def _died(self, wr):
        # Runs wherever the object dies (inside PyTorch, in the GC): only
        # notes it, and when; the next event polls the name.
        self._dead_objs.append((wr, self.clock() if self.clock is not None else 0))

    def _forget(self, name):
        e = self.entries.pop(name)
        self.epoch += 1
        same = self.by_storage.get(e.fact.storage)
        if same is not None:
            same.pop(name, None)
            if not same:
                del self.by_storage[e.fact.storage]
        self._watch.pop(name, None)
        if e.wr is not None:
            self._held_wr.pop(id(e.wr), None)
        k = e.fact.view_key
        if self.by_view.get(k) == name:
            del self.by_view[k]
        if self.out_storage.get(e.fact.storage) == name:
            del self.out_storage[e.fact.storage]
            if same:
                other = next((o.name for o in same.values() if o.kind == "out"), None)
                if other is not None:
                    self.out_storage[e.fact.storage] = other
        if e.obj_id is not None and self.by_obj.get(e.obj_id) == name:
            del self.by_obj[e.obj_id]
            del self.by_obj_entry[e.obj_id]

    def lookup(self, fact):
        """The live name that holds this tensor, if any: the same Python
        object, or another object over the same view of the same storage
        (autograd unpacks saved tensors into new objects)."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is not None:
            name = self.by_obj.get(id(obj))
            if name is not None:
                e = self.entries.get(name)
                if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                    if e.fact.storage == fact.storage and e.fact.offset == fact.offset:
                        return name
                    # `param.data = new`: the object holds other data now.
                    # The name's tensor is gone (the object no longer holds
                    # its storage); the object gets a new record, and the
                    # old name's del comes after it (begin_call): the new
                    # data was made while the old still lived, so it has
                    # another address, as in PyTorch.
                    self._forget(name)
                    self._swapped.append(name)
        name = self.by_view.get(fact.view_key)
        if name is not None and name in self.entries:
            return name
        return None

    def _swaps(self, fact):
        """Whether fact's object is a named one that now holds other data
        (`param.data = new`): what lookup turns into a new record."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None:
            return False
        e = self.by_obj_entry.get(id(obj))
        if e is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return False
        return e.fact.storage != fact.storage or e.fact.offset != fact.offset

    def _saved_name(self, fact):
        """A name for an input that is a replay's cached output the tree
        already counts dead: autograd kept it (a forward's saved tensor) and
        hands it to the backward now. Written as a `saved` record of the
        dead name, judged alive as the tree judges that output."""
        e = self._dead_cached.get(fact.view_key)
        if e is None:
            return None
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return None  # another tensor over memory the dead one had
        name = self._fresh("saved")
        self.trace.add({"op": "saved", "name": name, "of": e.name})
        if fact.probe is not None and e.fact.probe is not None:
            fact.probe.tree_ref = e.fact.probe.tree_ref
            fact.held = False
        self._bind(name, fact, "out")
        return name

    def _view_source(self, fact):
        """A live name that can stand for the storage a new input views: a
        tensor over the same storage, at offset 0, contiguous, of the same
        dtype, reaching at least as far as the view does (the largest such
        one). Returns (name, plain), plain when the input is a mere reshape
        of it (same element count, offset 0, contiguous)."""
        same = self.by_storage.get(fact.storage)
        if not same:
            return None
        need = extent(fact.shape, fact.offset, fact.stride)
        best = None
        for e in list(same.values()):
            f = e.fact
            if f.offset != 0 or f.dtype != fact.dtype:
                continue
            if not is_contiguous(f.shape, f.stride) or not e.fact.alive():
                continue
            n = numel(f.shape)
            if n < need:
                continue
            if best is None or n > best[1]:
                best = (e.name, n)
        if best is None:
            return None
        plain = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                 and numel(fact.shape) == best[1])
        return best[0], plain

    def _eager_view(self, fact, src, plain):
        name = self._fresh("view")
        rec = {"op": "eager", "out": name, "k": "view", "a": src, "shape": fit_shape(fact.shape)}
        if not plain:
            fields = view_fields(fact.shape, fact.offset, fact.stride)
            if not fields:  # folded past MAX_DIMS: not a view the format can say
                return None
            rec.update(fields)
        src_dtype = self.entries[src].fact.dtype
        if fact.dtype != src_dtype:
            rec["dtype"] = fact.dtype
        self.trace.add(rec)
        self._bind(name, fact, "view")
        return name

    def _name_view(self, fact):
        """Names an input that is a view of storage the trace may not hold
        yet: an eager `view` of a named tensor over it; else of its base
        (tensor._base, named now); else of a tensor standing for the whole
        storage, which lives as long as the storage does. Returns None for a
        tensor that is its storage's sole, plain occupant."""
        got = self._view_source(fact)
        if got is not None:
            return self._eager_view(fact, got[0], got[1])
        whole = fact.storage_numel
        covers = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                  and (whole is None or whole <= numel(fact.shape)))
        if covers:
            return None
        base = None
        if fact.base is not None:
            try:
                base = fact.base()
            except Exception:
                base = None
        # Only a base the format can hold as a plain tensor (contiguous, at
        # offset 0, of the view's dtype) is named; otherwise the storage is.
        if (base is not None and base.storage == fact.storage and base.view_key != fact.view_key
                and base.offset == 0 and is_contiguous(base.shape, base.stride)
                and base.dtype == fact.dtype):
            if self.lookup(base) is None and self._name_view(base) is None:
                self._tensor_record(base, "tensor", "base")
            got = self._view_source(fact)
            if got is not None:
                return self._eager_view(fact, got[0], got[1])
        if whole is None or whole < extent(fact.shape, fact.offset, fact.stride):
            return None
        # The storage itself: alive while the storage is (a view keeps it).
        stor = Fact([whole], fact.device, None, fact.storage, 0, (1,),
                    fact.probe.storage_alive if fact.probe is not None else fact.alive,
                    None, fact.dtype, whole, None)
        whole_name = self._tensor_record(stor, "tensor", "storage")
        return self._eager_view(fact, whole_name, False)

    # -- liveness

    def _flush_dead(self, names):
        if self._dead_objs:
            self._poll_dead_objs()
        watch = self._watch
        if not watch:
            return
        if len(watch) < len(names):
            # Fewer polled names than arguments (a model's parameters are
            # held, not polled): the polled ones among the arguments, found
            # from the smaller side. (The dels come out in binding order
            # either way.)
            got = self._argset
            if got is not None and got[0] is names:  # a loop's calls share one args list
                args = got[1]
            else:
                args = set(names)
                self._argset = (names, args)
            if args.isdisjoint(watch):  # (a steady loop: only its outputs are polled)
                return
            names = [n for n in watch if n in args]
        dead = None
        for n in names:
            e = watch.get(n)
            if e is not None and not e.fact.alive():
                if dead is None:
                    dead = [e]
                elif e not in dead:
                    dead.append(e)
        if dead is not None:
            self._emit_dels(dead)

    def _emit_dels(self, dead):
        """One `del` for the dead entries, in binding order, names forgotten."""
        if not dead:
            return
        dead.sort(key=lambda e: e.order)
        names = [e.name for e in dead]
        for e in dead:
            if e.kind == "out" and _cached_output(e.fact):
                self._dead_cached[e.fact.view_key] = e
        for n in names:
            self._forget(n)
        self.counts["dels"] += len(names)
        self.trace.add({"op": "del", "names": names})

    def _poll_dead_objs(self, upto=None):
        """Names whose object died since the last event join the polled ones
        (their storage may live on: autograd's unpacked copies, views);
        with upto, only those that died while the step counter was at upto
        or above (before the step that took it below)."""
        later = []
        while self._dead_objs:
            wr, at = self._dead_objs.pop()
            if upto is not None and at < upto:
                later.append((wr, at))
                continue
            name = self._held_wr.pop(id(wr), None)
            e = self.entries.get(name) if name is not None else None
            if e is not None and e.wr is wr:
                e.wr = None
                self._watch[name] = e
        self._dead_objs.extend(later)

    def flush_deaths(self, upto=None):
        """Emits one `del` for every named tensor that died since the last
        event (with upto, of the objects whose death the session heard of,
        those that died before the step counter went below upto), in
        binding order, so a replay drops them where PyTorch did."""
        if self._dead_objs:
            self._poll_dead_objs(upto)
        if not self._watch:
            return  # nothing is polled: every named object is alive
        dead = None
        for e in self._watch.values():
            if not e.fact.alive():
                if dead is None:
                    dead = [e]
                else:
                    dead.append(e)
        if dead is not None:
            self._emit_dels(dead)

    # -- events

    def known(self, obj):
        """The live name bound to this very object, or None."""
        return _known_name(self.by_obj_entry.get(id(obj)), obj)

    def read_target(self, obj, storage):
        """The name a host read of `obj` reads, when it is a tree output or a
        view of one (None otherwise: reading an eager tensor never fails).
        `storage` is a callable giving obj's storage identity, asked only
        when some tree output lives."""
        if not self.out_storage:
            return None
        name = self.by_obj.get(id(obj))
        if name is not None:
            e = self.entries.get(name)
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                return name if e.fact.storage in self.out_storage else None
        return self.out_storage.get(storage())

    def read(self, name, error=None):
        """A host read (.item(), .cpu(), print) of a named tree output, and
        whether PyTorch raised (an output a later replay overwrote)."""
        self.flush_deaths()
        if name not in self.entries:
            return
        self.counts["reads"] += 1
        self.trace.add({"op": "read", "name": name})
        if error is not None:
            self.counts["errors"] += 1
        self.trace.add({"op": "expect", "error": error})

    def reset(self, device=None):
        """The trees were dropped: every device's (device None:
        reset_cudagraph_trees, from torch._dynamo.reset()) or one device's
        (its manager ended with its last compiled function)."""
        self._device_record("reset", device)

    def skipped_backward(self, device):
        """A compiled backward ran without CUDA graphs (its manager's
        set_to_running_backward): no backward is pending any more. Device 0
        is the format's default."""
        self._device_record("skipped_backward", device or None)

    def _device_record(self, op, device):
        self.flush_deaths()
        rec = {"op": op}
        if device is not None:
            rec["device"] = device
        self.trace.add(rec)

    def step(self, upto=None):
        """A step (mark_step), after the deaths before it: with upto, the
        step counter's value before this step (see flush_deaths)."""
        self.flush_deaths(upto)
        self.counts["steps"] += 1
        self.trace.add(_STEP)  # records are never changed once added: one is enough

    def note(self, text):
        self.trace.add({"op": "note", "text": text})

    def config(self, changes):
        """Settings that changed since the last config the trace holds (a
        test patching torch._inductor.config mid-program), in force from
        here on."""
        rec = {"op": "config"}
        rec.update(changes)
        self.trace.add(rec)

    def _fn(self, info):
        st = self.fns.get(info.key)
        if st is None:
            name = sanitize(info.base, "fn")
            name = "%s_%s" % (name, info.key[-1]) if isinstance(info.key, tuple) else "%s_%s" % (name, info.key)
            base, n = name, 0
            while name in self.fn_names:
                n += 1
                name = "%s_%d" % (base, n)
            self.fn_names.add(name)
            st = _FnState(name, info)
            self.fns[info.key] = st
        return st

    def fn_name(self, key):
        st = self.fns.get(key)
        return st.name if st is not None else None

    def _tensor_record(self, fact, op, base):
        name = self._fresh(base)
        shape = fit_shape(fact.shape)
        rec = {"op": op, "name": name, "shape": shape}
        if fact.dtype != "float32":
            rec["dtype"] = fact.dtype
        values = None
        # Values only for float32: the format computes no other dtype.
        if numel(shape) <= SMALL_TENSOR and fact.read_values is not None and fact.dtype == "float32":
            try:
                values = fact.read_values()
            except Exception:  # e.g. an overwritten cudagraph output: values unreadable
                values = None
            if values is not None and (len(values) != numel(shape)
                                       or not all(math.isfinite(v) for v in values)):
                values = None
        if values is not None:
            rec["init"] = "values"
            # Whole numbers as ints (1, not 1.0): the form cgtviz fmt writes.
            rec["values"] = [int(v) if float(v).is_integer() else v for v in values]
        else:
            self.seed += 1
            rec["init"] = "rand"
            rec["seed"] = self.seed
        if fact.device:
            rec["device"] = fact.device
            self.trace.devices = max(self.trace.devices, fact.device + 1)
        self.trace.add(rec)
        self.counts["params" if op == "param" else "tensors"] += 1
        self._bind(name, fact, op)
        return name

    def begin_call(self, info, inputs, param_names=None, invocation=None):
        """Records everything before a call: deaths, the tensors it reads
        that the trace has not named yet. `inputs` holds a Fact per tensor
        input and None for the rest (SymInts, generators), by input index.
        `param_names` maps an input index to a preferred name (a module's
        parameter path). `invocation` is Dynamo's generation counter when
        the call ran (calls with equal values are one top-level compiled
        invocation). Returns the call's context for end_call."""
        self.flush_deaths()
        fs = self._fn(info)
        args, param_list, shapes, pdtypes, pviews = [], [], [], [], []
        self._swapped = []
        ph = info.placeholders
        # A parameter whose data the program replaced (`param.data = new`)
        # is written first: the replacement ran before the call's
        # expression made its new inputs (the usual `p.data = ...;
        # f(torch.rand(...))`), and the allocator hands out memory in that
        # order (a new input can take the old data's block).
        # (The positions of the Facts: the inputs new to the trace, few
        # among a model's named parameters.)
        order = _fact_positions(inputs)
        if any(self._swaps(inputs[i]) for i in order):
            order.sort(key=lambda i: not self._swaps(inputs[i]))
        named = {}
        for idx in order:
            fact = inputs[idx]
            name = self.lookup(fact)
            if name is None:
                name = self._saved_name(fact)
            if name is None:
                name = self._name_view(fact)
            if name is None:
                hint = (param_names or {}).get(idx)
                if idx in info.static:
                    name = self._tensor_record(fact, "param", sanitize(hint, "param") if hint else "param")
                else:
                    ph_name = ph[idx] if idx < len(ph) else ""
                    if info.mode == "backward":
                        base = "grad" if str(ph_name).startswith("tangents") else "saved"
                    else:
                        base = "in"
                    name = self._tensor_record(fact, "tensor", base)
            named[idx] = name
            if self._swapped:
                self.counts["dels"] += len(self._swapped)
                self.trace.add({"op": "del", "names": self._swapped})
                self._swapped = []
        if fs.params is not None:
            # (A str: the torch side found its name, Recorder._before_call.)
            args = list(inputs)
            for idx in order:
                args[idx] = named[idx]
            if None in args:
                args = [a for a in args if a is not None]
        else:
            # The function's first call: its def's parameters too.
            for idx, fact in enumerate(inputs):
                if fact is None:
                    continue
                if isinstance(fact, str):
                    args.append(fact)
                    continue
                args.append(named[idx])
                pname = sanitize(ph[idx], "x") if idx < len(ph) and ph[idx] else "x%d" % idx
                param_list.append(pname)
                shapes.append(fit_shape(fact.shape))
                pdtypes.append(fact.dtype)
                pviews.append((fact.offset, tuple(fact.stride)))
        if fs.params is None:
            # Local names of the def: unique, and apart from the r<i> outputs.
            seen, uniq = set(), []
            for p in param_list:
                q, n = p, 0
                while q in seen or re.fullmatch(r"r\d+(_\d+)?", q):
                    n += 1
                    q = "%s_%d" % (p, n)
                seen.add(q)
                uniq.append(q)
            fs.params, fs.shapes = uniq, shapes
            fs.tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
            fs.dtypes, fs.views = pdtypes, pviews
            fs.info = info
        fs.calls += 1
        self.counts["calls"] += 1
        if fs.defined:  # _define, which reads the inputs' Facts, has run
            return {"fn": fs, "args": args, "invocation": invocation}
        tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
        return {"fn": fs, "args": args, "tensor_idx": tensor_idx, "inputs": list(inputs),
                "invocation": invocation}

    def begin_known_call(self, fs, args, invocation=None):
        """begin_call for a defined function (fs) whose every tensor input
        the torch side found by its name (args, in input order): what is
        left of begin_call then is deaths and counts. The steady loop's
        path."""
        self.flush_deaths()
        fs.calls += 1
        self.counts["calls"] += 1
        # The same names as the function's last call (a loop's): that call's
        # list, shared (records are never changed), so the trace holds, and
        # the writer encodes, one list for all of them.
        last = fs.last_args
        if last is args:
            pass
        elif last is not None and last == args:
            args = last
        else:
            fs.last_args = args
        return {"fn": fs, "args": args, "invocation": invocation}

    def end_call(self, ctx, actions, node=None, checkpoints=None, outputs=None,
                 error=None, device=0):
        """Records the call and PyTorch's decision about it. `outputs` holds,
        by output position, a Fact per tensor output and None for anything
        else (a SymInt, None, a tensor left out); it is None when the call
        raised. `node` is (fn key, parent fn key or None) for record and
        replay.

        The def returns the positions that held tensors at the function's
        first call; a later call binds each of them (`_` where it holds no
        tensor this time), so `out` always has one name per returned value."""
        fs = ctx["fn"]
        if outputs is not None and not fs.defined:
            fs.out_pos = [i for i, f in enumerate(outputs) if f is not None]
            fs.out_dense = len(fs.out_pos) == len(outputs)
            self._define(fs, ctx, [outputs[i] for i in fs.out_pos])
        if outputs is not None and not (fs.out_dense and len(outputs) == len(fs.out_pos)):
            # (Every position held a tensor at the first call and the count is
            # the same: outputs is already what the def returns.)
            extra = [i for i, f in enumerate(outputs) if f is not None and i not in fs.out_pos]
            if extra and not fs.warned_extra:
                fs.warned_extra = True
                self.note("%s returned tensors at positions %s, which its first call did not: "
                          "they are not in the trace" % (fs.name, extra))
            outputs = [outputs[i] if i < len(outputs) else None for i in fs.out_pos]
        call = {"op": "call", "fn": fs.name, "args": ctx["args"]}
        outs = []
        if outputs:
            # An output's name is unique by its making (function, call,
            # position): _fresh, which would give the same name, is asked
            # only when the name is taken (by a tensor named so).
            used = self.names_used
            calls = fs.calls
            for i, f in enumerate(outputs):
                if f is None:
                    outs.append("_")
                    continue
                n = "%s_c%d_%d" % (fs.name, calls, i)
                if n in used:
                    n = self._fresh(n)
                else:
                    used.add(n)
                outs.append(n)
            call["out"] = outs
        inv = ctx["invocation"]
        if inv is not None:
            call["invocation"] = int(inv)
        trace = self.trace
        trace.add(call)
        action = actions[-1] if actions else "eager"
        self.counts[action] += 1
        # A steady replay expects the same as the one before it: one record
        # object per distinct expect, shared (records are never changed
        # once added), built once.
        ekey = (action, node, checkpoints, device) if error is None else None
        exp = self._expects.get(ekey) if ekey is not None else None
        if exp is not None:
            trace.add(exp)
            if self._watch or self._dead_objs:
                self._flush_dead(ctx["args"])
            if outputs:
                self._bind_outputs(outs, outputs)
            return
        exp = {"op": "expect", "action": action}
        if node is not None and action in ("record", "replay"):
            fn = self.fn_name(node[0])
            parent = self.fn_name(node[1]) if node[1] is not None else None
            # A node of a function this trace never defined (recorded before
            # recording began) cannot be named: leave the check out.
            if fn is not None and (node[1] is None or parent is not None):
                exp["node"] = {"fn": fn, "parent_fn": parent}
        if checkpoints is not None:
            exp["checkpoints"] = checkpoints
        if error is not None:
            self.counts["errors"] += 1
            exp["error"] = error
        if device:
            exp["device"] = device
        if ekey is not None and (node is None or "node" in exp):
            # (A node left unnamed may be named later, once its function is.)
            self._expects[ekey] = exp
        self.trace.add(exp)
        # Inputs that died inside the call (the tree clears its input list,
        # autograd frees saved tensors in a backward): deleted right after
        # the call's expect, before anything else happens, so no later
        # record sees them alive and no output is mistaken for them.
        self._flush_dead(ctx["args"])
        self._bind_outputs(outs, outputs)

    def _bind_outputs(self, outs, outputs):
        if not outputs:
            return
        # Bind outputs. A name whose object comes back again (a replay hands
        # out the same cached tensor object every time) is retired, since the
        # program's variable now holds the new binding. An output that is a
        # tensor the program already names otherwise (a parameter a forward
        # returns for autograd to save, an input returned as is) stays
        # represented by that name: its output name is dropped at once, or it
        # would live as long as the parameter.
        drop = []
        renamed = []  # (order, name) of names retired by _rename
        start = self.order  # entries up to this one were bound before this call's outputs
        entries = self.entries
        by_obj_entry = self.by_obj_entry
        for name, f in zip(outs, outputs):
            if f is None:
                continue
            ref = f.obj_ref
            obj = ref() if ref is not None else None
            # lookup(f), with the entry it finds: the object's own name, else
            # the name over its view.
            e = by_obj_entry.get(id(obj)) if obj is not None else None
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                old, same_obj = e.name, True
            else:
                old = self.by_view.get(f.view_key)
                e = entries.get(old) if old is not None else None
                if e is None:
                    old = None
                else:
                    same_obj = obj is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj
            takeover = True
            if old is not None and old not in drop:
                if e.kind == "out":
                    if same_obj:
                        order = e.order
                        if e.fact is f and order <= start and self._rename(e, name, obj):
                            renamed.append((order, old))
                            continue
                        drop.append(old)
                elif (same_obj or e.fact.view_key == f.view_key) and e.fact.alive():
                    takeover = False
                    drop.append(name)
            self._bind(name, f, "out", takeover)
        if renamed:
            if len(renamed) == 1 and not drop:  # a steady replay's one output
                names = [renamed[0][1]]
            else:
                gone = sorted(renamed + [(self.entries[n].order, n) for n in drop])
                names = [n for _, n in gone]
                drop.sort(key=lambda n: self.entries[n].order)
        elif drop:
            drop.sort(key=lambda n: self.entries[n].order)
            names = drop
        else:
            return
        for n in drop:
            self._forget(n)
        self.counts["dels"] += len(names)
        self.trace.add({"op": "del", "names": names})

    def _rename(self, e, name, obj):
        """Binds `name` to the tensor of output entry e, whose name retires:
        what _bind(name, e.fact, "out") then _forget(e.name) leave behind,
        done in place (no new entry, Fact or weak reference). It is a
        replay's cached output handed out again, found with its Fact. The
        storage's other names keep their places; the new name goes last,
        as _bind puts it, and the storage's output name, if it was e's,
        becomes the first output name left over it, as _forget picks it.
        Returns False, changing nothing, when e is not where it should be."""
        st = e.fact.storage
        same = self.by_storage.get(st)
        old = e.name
        if same is None or same.get(old) is not e:
            return False
        if e.in_memo:
            self.epoch += 1
        self.order += 1
        e.order = self.order
        del self.entries[old]
        self.entries[name] = e
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        oid = id(obj)
        if e.obj_id is not None and e.obj_id != oid and self.by_obj.get(e.obj_id) == old:
            del self.by_obj[e.obj_id]
            del self.by_obj_entry[e.obj_id]
        self.by_obj[oid] = name
        self.by_obj_entry[oid] = e
        e.obj_id = oid
        self.by_view[e.fact.view_key] = name
        e.name = name
        if e.fact.held:
            if e.wr is None:
                self._watch.pop(old, None)
                e.wr = weakref.ref(obj, self._died)
            self._held_wr[id(e.wr)] = name
        else:
            if e.wr is not None:
                self._held_wr.pop(id(e.wr), None)
                e.wr = None
            self._watch.pop(old, None)
            self._watch[name] = e
        return True

    def _rename_out_storage(self, st, old, name, same):
        """The output name that stands for storage st, after old was renamed
        name: the new name where old stood (or nothing did), among the
        storage's names (same) an output's."""
        if self.out_storage.get(st, old) == old:
            if len(same) == 1:
                self.out_storage[st] = name
            else:
                self.out_storage[st] = next(o.name for o in same.values() if o.kind == "out")

    def _rename_replayed(self, e, name, order=None):
        """_rename for the output entry of a replay the recorder's short path
        checked (Recorder._fast_after): the same object as the entry's, over
        the same storage, named there, polled (not held), so of _rename
        only what changes is done. With order, the entry takes that order
        (the last of a deferred run's renames, Recorder._write_pending,
        which counted the others) instead of the next one."""
        old = e.name
        if e.in_memo:
            self.epoch += 1
        if order is None:
            self.order += 1
            order = self.order
        e.order = order
        entries = self.entries
        del entries[old]
        entries[name] = e
        st = e.fact.storage
        same = self.by_storage[st]
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        self.by_obj[e.obj_id] = name
        self.by_view[e.fact.view_key] = name
        e.name = name
        watch = self._watch
        watch.pop(old, None)
        watch[name] = e

    def _define(self, fs, ctx, outputs):
        ins = ctx["inputs"]
        tidx = ctx["tensor_idx"]
        pos = {i: k for k, i in enumerate(tidx)}
        specs = []
        for i, f in enumerate(outputs):
            alias, exact = None, False
            for j in tidx:
                # An input that died during the call cannot be aliased, and its
                # storage's address may already be another's: check it lives.
                if ins[j].storage == f.storage and ins[j].alive():
                    alias = ("param", pos[j])
                    exact = ins[j].view_key == f.view_key
                    break
            if alias is None:
                for k in range(i):
                    g = outputs[k]
                    if g.storage == f.storage:
                        alias = ("output", k)
                        exact = g.view_key == f.view_key
                        break
            specs.append(OutSpec(f.shape, alias, exact, f.dtype, f.offset, f.stride,
                                 f.storage_numel))
        mutated = [pos[j] for j in fs.info.mutated if j in pos]
        rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, specs, mutated,
                        fs.dtypes, fs.views)
        # The graph's static inputs (static_input_idxs), by def position: in
        # a backward its saved tensors are, whatever made them.
        rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
        self.trace.set_def(rec)
        fs.defined = True

    def finish(self):
        """Emits the deaths seen at the end, and a def for every function
        whose calls all raised before it returned outputs (with no results,
        as nothing more was observed)."""
        self.flush_deaths()
        for fs in self.fns.values():
            if not fs.defined and fs.params is not None:
                # What the tree knew of the function: the inputs it mutates
                # (a call that raised on them, as cudagraph_or_error makes
                # it, still needs them) and its static inputs.
                pos = {i: k for k, i in enumerate(fs.tensor_idx or ())}
                mutated = [pos[j] for j in fs.info.mutated if j in pos]
                rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, [], mutated)
                rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
                self.trace.set_def(rec)
                fs.defined = True
