"""The overwritten error raised outside the read methods: an eager op of
the program (torch.stack of a list of outputs, `a + b`, `t.sum()`)
touching a tree output that a later generation deallocated. The read
wrappers (hooks._install_reads) see only the methods by which the host
reads values; PyTorch raises this error on any access to the output's
data, and a user who keeps outputs across iterations meets it in an op.

Python 3.12's sys.monitoring reports each raise (RAISE), frame by frame
as the exception unwinds, through a tool id of the recorder's own, while
an output or a storage PyTorch deallocated is alive (torch._C's
_set_storage_access_error_msg and _set_storage_data_ptr_access_error_msg,
wrapped, say which). In the first frame
where a value that the raising expression loads (the call's callee and
arguments: a name, or an attribute from its object's own __dict__,
`self.keys`) holds a tree output whose data pointer raises that error
(the value a tensor, or a list, tuple or dict of them), the output is
named, and the error is recorded as a read of it (Session.read: `read`,
then `expect error`), as a read method's would be. No property or
__getattr__ is run (they are the program's code).

The autograd engine raises it too, with no frame of ours between: a
backward that adds to a .grad that an earlier backward's output became
(gradient accumulation with a mark_step between the micro-batches,
pytorch#169545) touches that output in C++ (AccumulateGrad). Where the
raising expression calls the engine (`...run_backward(t_outputs, ...)`),
the .grad of each leaf the tensors it loads reach through their grad_fn
is looked at: the one whose marking message is the error's, else the
first found. Before 3.12 nothing here runs: such an error is not
recorded as it is raised, the read methods' still are, and so is
the error the recorded code ends on (_on_uncaught: the program did not
catch it), looked for in its traceback's frames."""

import collections
import dis
import sys
import weakref

from . import torch_api
from .errors import _error_text

# What the overwritten error's message holds (research/pytorch-cgt.md 3.1).
_OVERWRITTEN = "overwritten by a subsequent run"
# The instructions that load a name's value (3.12 to 3.14's spellings).
_LOADS = frozenset(("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW",
                    "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF"))
# The elements of a list, tuple or dict looked at, at most.
_MAX_ITEMS = 4096
# The autograd graph's nodes looked at, at most, for the .grad an engine's
# error touched (a walk made only once such an error is raised).
_MAX_NODES = 1 << 16
# The attribute the raising expression reads where it calls the autograd
# engine (torch.autograd.graph._engine_run_backward in 2.11, the
# backward functions themselves before).
_ENGINE_CALL = "run_backward"
# The tool ids tried, in turn (0 to 2 and 5 are named for debuggers,
# coverage, profilers and optimizers: taken last).
_TOOL_IDS = (4, 3, 5, 2, 1, 0)


def _loaded_values(frame, ins):
    """The values that the raising instruction's expression loads (a
    call's: the callee and its arguments), in order, of ins (_spanned's:
    the raising instruction last): each load of a name whose source span
    lies within the instruction's (or on its line where the code has no
    columns), and each attribute read of the value loaded just before it
    (`self.keys`) from that object's own __dict__ (no descriptor,
    property or __getattr__ runs)."""
    if not ins:
        return []
    span = ins[-1][1]
    values, prev = [], _NOTHING
    for i, s in ins:
        v = _NOTHING
        if _within(s, span):
            if i.opname in _LOADS:
                names = i.argval if isinstance(i.argval, tuple) else (i.argval,)
                for n in names:
                    v = _value(frame, n)
                    values.append(v)
            elif i.opname == "LOAD_ATTR" and prev is not _NOTHING:
                v = _own_attr(prev, i.argval)
                values.append(v)
        prev = v
    return values


def _calls_engine(ins):
    """Whether the raising instruction's expression reads the autograd
    engine's run_backward attribute (ins: as _loaded_values takes them)."""
    if not ins:
        return False
    span = ins[-1][1]
    return any(i.argval == _ENGINE_CALL and i.opname in ("LOAD_ATTR", "LOAD_METHOD") and _within(s, span)
               for i, s in ins)


def _accumulated_grads(roots):
    """The .grad of each leaf the tensors roots reach through their
    grad_fn (an AccumulateGrad node's variable), in the order a walk
    from them meets them: the tensors the engine's AccumulateGrad adds
    to. Only torch's getters run (grad_fn, next_functions, variable,
    grad)."""
    # (seen keeps each node's object: torch makes a C++ node's Python
    # object anew at each access and frees it when let go, and a node
    # reached later would take a freed one's id.)
    seen, grads = {}, []
    todo = collections.deque(getattr(t, "grad_fn", None) for t in roots)
    while todo and len(seen) < _MAX_NODES:
        fn = todo.popleft()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        v = getattr(fn, "variable", None)
        if v is not None:
            g = getattr(v, "grad", None)
            if g is not None:
                grads.append(g)
            continue
        for nxt in getattr(fn, "next_functions", ()) or ():
            if type(nxt) is tuple and nxt:
                todo.append(nxt[0])
    return grads


def _own_attr(obj, name):
    """obj's attribute name from its instance __dict__, or None."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return d.get(name) if type(d) is dict else None


# (No value: the instruction before loaded nothing.)
_NOTHING = object()


def _spanned(code, offset):
    """code's instructions up to the one at offset, each with its source
    span: ((line, col), (end line, end col)), the columns None where the
    code has none (before 3.11: the line alone), the span None where it
    has no line. (The offset reported may be an inline cache entry's,
    after its instruction: the raising one is the last at or before it.)"""
    ins = [i for i in dis.get_instructions(code) if i.offset <= offset]
    if ins and getattr(ins[0], "positions", None) is None:
        starts, line, out = dict(dis.findlinestarts(code)), None, []
        for i in ins:
            line = starts.get(i.offset, line)
            out.append((i, None if line is None else ((line, None), (line, None))))
        return out
    return [(i, _span(i)) for i in ins]


def _span(ins):
    p = ins.positions
    if p is None or p.lineno is None:
        return None
    return (p.lineno, p.col_offset), (p.end_lineno if p.end_lineno is not None else p.lineno, p.end_col_offset)


def _within(inner, outer):
    if inner is None or outer is None:
        return False
    (l0, c0), (l1, c1) = inner
    (L0, C0), (L1, C1) = outer
    if None in (c0, c1, C0, C1):
        return l0 == L0
    return (L0, C0) <= (l0, c0) and (l1, c1) <= (L1, C1)


def _value(frame, name):
    """name's value in frame (its locals, then its globals and builtins),
    or None."""
    for scope in (frame.f_locals, frame.f_globals):
        if name in scope:
            return scope[name]
    b = frame.f_globals.get("__builtins__")
    b = b if isinstance(b, dict) else getattr(b, "__dict__", {})
    return b.get(name)


def _tensors(v, Tensor):
    """The tensors v is or holds at its first level."""
    if isinstance(v, Tensor):
        return [v]
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        return [x for x in v[:_MAX_ITEMS] if isinstance(x, Tensor)]
    return []


# The attribute that marks an error recorded (or found to name no output)
# as it unwinds through the frames that report it again: no weak
# reference to an exception can be made, a strong one would keep its
# frames' tensors alive (and change when they die), and an id is reused
# by the next error of a loop that raises the same one.
SEEN = "_cgtrace_seen"


def _unrecorded_overwritten(exc):
    """exc's message when exc is the overwritten error and not recorded
    yet (not marked seen), else None."""
    msg = exc.args[0] if isinstance(exc, RuntimeError) and exc.args else None
    if type(msg) is not str or _OVERWRITTEN not in msg or getattr(exc, SEEN, False):
        return None
    return msg


def mark_seen(exc):
    """exc recorded: not again in the frames it unwinds through."""
    try:
        setattr(exc, SEEN, True)
    except Exception:  # (an error type without a __dict__: reported again, found recorded by no output)
        pass


def _marking(orig, made):
    """orig (one of torch._C's functions by which the tree marks an
    output or a storage overwritten), calling made(its first argument,
    the message) after it."""

    def marked(obj, msg, *rest):
        out = orig(obj, msg, *rest)  # (torch's own, first and unchanged)
        try:
            made(obj, msg)
        except Exception:
            pass
        return out

    marked.__name__ = getattr(orig, "__name__", "marked")
    return marked


class _Raised:
    """Recorder's part: the overwritten error an eager op raised."""

    # The sys.monitoring tool id held while recording (None: not watching).
    _raise_tool = None
    # Whether a failure here was noted (once).
    _raise_failed = False
    # The live outputs whose data raises the overwritten error, by their
    # weak references' ids (each with the message PyTorch gave it), and
    # such storages' weak references: the RAISE events are on while there
    # is one.
    _overwritten = {}
    _overwritten_storages = []

    def _watch_raises(self):
        """Takes a free sys.monitoring tool id for RAISE (3.12 on; a note
        when none is free)."""
        mon = getattr(sys, "monitoring", None)
        if mon is None:
            return
        for tid in _TOOL_IDS:
            if mon.get_tool(tid) is None:
                try:
                    mon.use_tool_id(tid, "cgtrace")
                except ValueError:  # (taken meanwhile)
                    continue
                break
        else:
            self.session.note("cgtrace: no sys.monitoring tool id free: an overwritten output's error raised by "
                              "an eager op is not recorded")
            return
        self._raise_tool = tid  # (held from here: _unwatch_raises gives it back)
        mon.register_callback(tid, mon.events.RAISE, self._on_raise)
        self._overwritten = {}
        self._overwritten_storages = []
        # The events only while an output or a storage PyTorch
        # deallocated lives (the only time the error can be raised): the
        # tree marks an output through _set_storage_access_error_msg, and
        # a storage that a view or a detach() keeps after its output died
        # (`losses.append(loss.detach())`) through
        # _set_storage_data_ptr_access_error_msg, both wrapped here to
        # watch what they mark die. A loop that lets its outputs go pays
        # nothing (a raise costs a Python call while the events are on:
        # torch's no_grad raises a StopIteration at each step). A torch
        # without both: the events all the time.
        C = getattr(self.torch, "_C", None)
        marks = {"_set_storage_access_error_msg": self._overwritten_output_made,
                 "_set_storage_data_ptr_access_error_msg": self._overwritten_storage_made}
        if not all(getattr(C, name, None) is not None for name in marks):
            mon.set_events(tid, mon.events.RAISE)
            return
        from .hooks import _ABSENT  # (hooks imports this module)
        for name, made in marks.items():
            self._saved[(C, name)] = vars(C).get(name, _ABSENT)
            setattr(C, name, _marking(getattr(C, name), made))

    def _overwritten_output_made(self, t, msg):
        """t's data now raises the overwritten error (msg): the events on
        while it lives."""
        tid = self._raise_tool
        if tid is None:
            return
        r = weakref.ref(t, self._overwritten_output_died)
        self._overwritten[id(r)] = (r, msg)
        sys.monitoring.set_events(tid, sys.monitoring.events.RAISE)

    def _overwritten_storage_made(self, handle, msg):
        """The storage of handle (the weak handle the tree's
        StorageWeakRefWrapper holds, not ours to keep) now raises the
        overwritten error: the events on while it lives, its weak
        reference of our own looked at as raises come."""
        tid = self._raise_tool
        if tid is None or type(handle) is not int:
            return
        stor = self.torch.UntypedStorage._new_with_weak_ptr(handle)
        if stor is None:
            return
        self._overwritten_storages.append(torch_api.StorageWeakRef(stor))
        stor = None
        sys.monitoring.set_events(tid, sys.monitoring.events.RAISE)

    def _overwritten_output_died(self, r):
        self._overwritten.pop(id(r), None)
        self._maybe_quiet()

    def _maybe_quiet(self):
        """The events off once no overwritten output or storage lives (a
        storage's death has no callback: looked at from each raise while
        the events are on, and from each output's death)."""
        stors = self._overwritten_storages
        if stors:
            stors[:] = [r for r in stors if not r.expired()]
        if not self._overwritten and not stors and self._raise_tool is not None:
            sys.monitoring.set_events(self._raise_tool, 0)

    def _unwatch_raises(self):
        tid, self._raise_tool = self._raise_tool, None
        if tid is None:
            return
        self._overwritten = {}  # (their callbacks go with them)
        self._overwritten_storages = []
        mon = sys.monitoring
        mon.set_events(tid, 0)
        mon.register_callback(tid, mon.events.RAISE, None)
        mon.free_tool_id(tid)

    def _on_raise(self, code, offset, exc):
        """A raise in code at offset: recorded as a read when it is the
        overwritten error on a tree output a loaded value holds. Never
        raises (a failure is noted once in the trace)."""
        if not isinstance(exc, RuntimeError) or self._off:
            if self._overwritten_storages:
                try:
                    self._maybe_quiet()
                except Exception:
                    pass
            return
        msg = _unrecorded_overwritten(exc)
        if msg is None:
            return
        # A read method's error is recorded by its wrapper (busy, then
        # marked seen); one inside a tree call is the call's, and so is
        # one that unwinds out of it (an output the call was handed).
        if getattr(self.tls, "busy", False) or self._in_call():
            return
        if self._out_of_tree_call(exc):
            mark_seen(exc)
            return
        frame = sys._getframe(1)
        try:
            if frame.f_code is not code:
                return
            # (3.13 reports a frame the error unwinds through one code
            # unit before its call, the instruction before it then, which
            # loads only the call's arguments; f_lasti is the call's, as
            # 3.12's offset is)
            offset = max(offset, frame.f_lasti)
            name = self._overwritten_output(frame, code, offset, msg)
            if name is None:
                return  # (the next frame out may hold it)
            mark_seen(exc)
            self._on_read(name, _error_text(exc))
        except Exception as e:
            mark_seen(exc)
            self._raise_note(e)
        finally:
            frame = None

    def _raise_note(self, e):
        """The recorder's own failure e, looking for an overwritten error's
        output: noted in the trace once."""
        if not self._raise_failed:
            self._raise_failed = True
            try:
                self.session.note("cgtrace: could not record an overwritten output's error: %s: %s"
                                  % (type(e).__name__, e))
            except Exception:
                pass

    def _on_uncaught(self, exc):
        """The error the recorded code ended on (the recording's exit):
        an overwritten error that no raise event recorded (before 3.12,
        where there are none, or with no tool id free) is looked for from
        its traceback's innermost frame out, as each raise is, the frames'
        values as they were when it unwound. Never raises."""
        try:
            msg = _unrecorded_overwritten(exc)
            if msg is None or self._off or self._out_of_tree_call(exc):
                return
            frames = []
            tb = exc.__traceback__
            while tb is not None:
                frames.append((tb.tb_frame, tb.tb_lasti))
                tb = tb.tb_next
            for frame, lasti in reversed(frames):
                name = self._overwritten_output(frame, frame.f_code, lasti, msg)
                if name is not None:
                    mark_seen(exc)
                    self._on_read(name, _error_text(exc), frames[-1][0])  # (src: the program's line it ended on)
                    return
        except Exception as e:
            self._raise_note(e)
        finally:
            frames = frame = None

    def _out_of_tree_call(self, exc):
        """Whether exc came out of the tree's _run (torch's own frame on
        its traceback): the call's error, which the call records."""
        runs = {getattr(v, "__code__", None) for (_, attr), v in self._saved.items() if attr == "_run"}
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code in runs:
                return True
            tb = tb.tb_next
        return False

    def _overwritten_output(self, frame, code, offset, msg):
        """The name of the first tree output, among the tensors the raising
        expression loads, whose data pointer raises the overwritten error
        (msg); where it calls the autograd engine, of the .grad it added to."""
        Tensor = self.torch.Tensor
        with self.lock:
            if self._pending or self._fq:
                self._settle()  # (the deferred calls renamed the outputs: named as they stand once written)
            ins = _spanned(code, offset)
            loaded = [t for v in _loaded_values(frame, ins) for t in _tensors(v, Tensor)]
            for t in loaded:
                name = self._overwritten_name(t)
                if name is not None:
                    return name
            if not loaded or not _calls_engine(ins):
                return None
            # The autograd engine's: the .grad it added to (the one PyTorch
            # marked with this error's message, else the first found).
            found = None
            for g in _accumulated_grads(loaded):
                name = self._overwritten_name(g)
                if name is None:
                    continue
                if self._marked_with(g, msg):
                    return name
                if found is None:
                    found = name
            return found

    def _overwritten_name(self, t):
        """t's name when it is a tree output whose data pointer raises the
        overwritten error, else None."""
        name = self.session.read_target(t, lambda: t.untyped_storage()._cdata)
        if name is None:
            return None
        try:
            t.data_ptr()
        except RuntimeError as e:
            if _OVERWRITTEN in str(e):
                return name
        return None

    def _marked_with(self, t, msg):
        """Whether PyTorch marked t overwritten with the message msg (an
        error's text begins with it)."""
        for r, m in self._overwritten.values():
            if r() is t:
                return type(m) is str and type(msg) is str and msg.startswith(m)
        return False
