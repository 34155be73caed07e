"""What the session keeps of each tensor (Fact, and the _Entry that names
it), of each compiled function (FnInfo, _FnState) and of its last replay
(_ReplayPlan); with the getters the recorder's C-level passes use. Free
of torch."""

import itertools
import operator
import types
import weakref

from .jsonl import encode_record, _names_json

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

    __slots__ = ("key", "base", "mode", "static", "mutated", "placeholders", "device", "graph")

    def __init__(self, key, base, mode, static=(), mutated=(), placeholders=(), device=0, graph=None):
        self.key = key
        self.base = base
        self.mode = mode
        self.static = set(static)
        self.mutated = tuple(mutated)
        self.placeholders = list(placeholders)
        self.device = device
        # A weak reference to the compiled graph's callable (the
        # WrappedFunction's model), which the FunctionIDs cudagraphify
        # makes for each input size of a dynamic graph share; None where
        # there is none, or it takes no weak reference.
        self.graph = graph


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
                 "last_entries", "fresh_tok", "graph", "kept_memo")

    def __init__(self, name, info):
        self.name, self.info = name, info
        # The def whose compiled graph this function is another size of
        # (its def's "graph"), or None.
        self.graph = None
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
        # The KeptSet of its steady replays' inputs and what it was made
        # of (Recorder._kept_set's memo): a plan is made again at every
        # other function's call, the inputs stay.
        self.kept_memo = None
        # The torch side's entries that named the last call's inputs through
        # Recorder._before_call's general path, by position (_NO_ENTRY where
        # none did): where the next call looks first (or None).
        self.last_entries = None
        # What a call on new inputs through the recorder's fresh path left
        # for the next one (Recorder._fresh_done), or None.
        self.fresh_tok = None


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
                 "nin", "in_refs", "in_ptrs", "in_idx", "in_set", "nout", "out_refs", "wrappers",
                 "polled",
                 "fs", "uses", "cfg", "expect_line", "src_d", "src_code", "src_lines", "src_lasti")

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
        self.nin = self.in_refs = self.in_ptrs = self.in_idx = self.in_set = None
        self.nout = self.out_refs = self.wrappers = self.polled = None
        self.fs = None  # the function's _FnState
        # Whether a polled output's tree check counts c10's own reference
        # (2.11's: _refcount_rule's USE_COUNT): the poll reads _use_count().
        self.uses = False
        self.cfg = None  # the count of config writes (Recorder._count_config_writes) it was checked at
        # Where the calls' src frame is (Facts._call_srcs): its depth from
        # the frame that called the tree's _run, and a weak reference to
        # its code (None: the calls had no src; weak: see
        # Recorder.__init__'s caches); and the srcs of that code's lines
        # seen, by line: what a deferred replay's src is when its frame
        # there has that code (the _run wrapper's check).
        self.src_d = self.src_code = None
        self.src_lines = {}
        # The same srcs by the frame's instruction offset (f_lasti), found
        # there once: a frame's f_lineno reads the code's line table from
        # its start at every call, thousands of instructions in a long
        # function or a script's top level (src_of).
        self.src_lasti = {}
        self.set_args(args)

    @property
    def partial(self):
        """A partial plan has no entries: a replay one of whose outputs is
        no cached output the tree wraps, named by its object (a training
        forward hands out inputs it saves for the backward as outputs: a
        weight as is, the batch). Only where its calls come from is kept,
        for the fresh path's checks before a call (Recorder._check_fresh);
        _fast_after, the deferred replays and the queue take none of its
        calls (no entries to rename)."""
        return not self.entries

    @property
    def mixed(self):
        """A mixed plan's entries include a static input handed out as is
        (a training forward's weight): its name is the input's, and its
        output's is bound and dropped at every call. Only _fast_after's
        binding route takes its calls, not the deferred replays or the
        queue, which rename a cached output in place."""
        return any(e.kind != "out" for e in self.entries)

    def src_of(self, f):
        """The src a general call saw at frame f's line (f of the src's
        code: the caller checks), or None."""
        src = self.src_lasti.get(f.f_lasti)
        if src is None:
            src = self.src_lines.get(f.f_lineno)
            if src is not None:
                self.src_lasti[f.f_lasti] = src
        return src

    def see_src(self, at, src):
        """A call of the plan's function came from `at` ((depth, a weak
        reference to the code), or None) with `src`: the src of that line,
        kept for deferred replays from the same frame (a frame elsewhere
        starts over)."""
        if at is None:
            if self.src_code is not None:
                self.src_d = self.src_code = None
                self.src_lines, self.src_lasti = {}, {}
            return
        d, ref = at
        if d != self.src_d or self.src_code is None or ref() is not self.src_code():
            self.src_d, self.src_code, self.src_lines, self.src_lasti = d, ref, {}, {}
        if src is not None:
            line = src[0]["line"]
            if self.src_lines.get(line) is not src:
                self.src_lines[line] = src
                self.src_lasti.clear()  # (what it found holds the line's last src)

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

    def call_end(self):
        """What a deferred call's line is followed by, up to the name its
        del deletes (the writers put the previous output name and `"]}`
        after it): its expect's line and the del's head. None when the
        expect is no line (exp_line: the encoder refused it), and the
        deferred paths do not take the plan."""
        exp = self.exp_line()
        return '\n' + exp + '\n{"op": "del", "names": ["' if type(exp) is str else None

    def set_args(self, args):
        """The call line's head for this args list (a loop's calls share one)."""
        self.args = args
        self.argset = None  # (arg_set's, made where asked)
        aj = _names_json(args) if self.fn_json is not None else None
        self.head = (None if aj is None else
                     '{"op": "call", "fn": ' + self.fn_json + ', "args": ' + aj + ', "out": ["')

    def set_args_at(self, args, i, pre, post):
        """set_args for the args of the deferred fresh calls' template
        (freshq._fq_line: pre, the call line up to its i-th name; post,
        the line from there to its first output name), which are the
        template's names but at i: the head made of the template's parts,
        where that name is written as it is (not a list's json made again
        at every writing of the queue: a model's hundreds of parameter
        names)."""
        n = args[i]
        if (self.fn_json is None or type(n) is not str or not (n.isascii() and n.isprintable()) or '"' in n
                or "\\" in n):
            self.set_args(args)
            return
        self.args = args
        self.argset = None
        self.head = pre + n + post

    def arg_set(self):
        """The set of the args' names (made once for an args list: a
        loop's queue sets its args at every writing, and most writings
        are followed by another, not by a look at the set)."""
        s = self.argset
        if s is None:
            s = self.argset = frozenset(self.args)
        return s


def _known_name(e, obj):
    """e's name when e (an entry found by id) is bound to this very object."""
    if e is None:
        return None
    ref = e.fact.obj_ref
    return e.name if ref is not None and ref() is obj else None
