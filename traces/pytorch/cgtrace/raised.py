"""The overwritten error raised outside the read methods: an eager op of
the program (torch.stack of a list of outputs, `a + b`, `t.sum()`)
touching a tree output that a later generation deallocated. The read
wrappers (hooks._install_reads) see only the methods by which the host
reads values; PyTorch raises this error on any access to the output's
data, and a user who keeps outputs across iterations meets it in an op.

Python 3.12's sys.monitoring reports each raise (RAISE), frame by frame
as the exception unwinds, through a tool id of the recorder's own, while
an output PyTorch deallocated is alive (torch._C's
_set_storage_access_error_msg, wrapped, says which). In the first frame where a name that the
raising expression loads (the call's callee and arguments) holds a tree
output whose data pointer raises that error (the name's value a tensor,
or a list, tuple or dict of them), the output is named, and the error
is recorded as a read of it (Session.read: `read`, then `expect error`),
as a read method's would be. Attributes are never evaluated (a property
is the program's code). Before 3.12 nothing here runs: such an error is
not recorded, the read methods' still are."""

import dis
import sys
import weakref

from .errors import _error_text

# What the overwritten error's message holds (research/pytorch-cgt.md 3.1).
_OVERWRITTEN = "overwritten by a subsequent run"
# The instructions that load a name's value (3.12 to 3.14's spellings).
_LOADS = frozenset(("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW",
                    "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF"))
# The elements of a list, tuple or dict looked at, at most.
_MAX_ITEMS = 4096
# The tool ids tried, in turn (0 to 2 and 5 are named for debuggers,
# coverage, profilers and optimizers: taken last).
_TOOL_IDS = (4, 3, 5, 2, 1, 0)


def _loaded_names(code, offset):
    """The names that the raising instruction at offset's expression
    loads (a call's: the callee and its arguments), in order: each load
    whose source span lies within the instruction's, or on its line where
    the code has no columns."""
    # (The offset reported may be an inline cache entry's, after its
    # instruction: the raising one is the last at or before it.)
    ins = [i for i in dis.get_instructions(code) if i.offset <= offset]
    if not ins:
        return []
    at = ins[-1]
    span = _span(at)
    names = []
    for i in ins:
        if i.opname in _LOADS and _within(_span(i), span):
            v = i.argval
            names.extend(v if isinstance(v, tuple) else (v,))
    return names


def _span(ins):
    """An instruction's source span: ((line, col), (end line, end col)),
    the columns None where the code has none."""
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


def mark_seen(exc):
    """exc recorded: not again in the frames it unwinds through."""
    try:
        setattr(exc, SEEN, True)
    except Exception:  # (an error type without a __dict__: reported again, found recorded by no output)
        pass


class _Raised:
    """Recorder's part: the overwritten error an eager op raised."""

    # The sys.monitoring tool id held while recording (None: not watching).
    _raise_tool = None
    # Whether a failure here was noted (once).
    _raise_failed = False
    # The live outputs whose data raises the overwritten error, by their
    # weak references' ids: the RAISE events are on while there is one.
    _overwritten = {}

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
        mon.register_callback(tid, mon.events.RAISE, self._on_raise)
        self._raise_tool = tid
        self._overwritten = {}
        # The events only while an output PyTorch deallocated lives (the
        # only time the error can be raised): PyTorch marks each such
        # output through torch._C._set_storage_access_error_msg, wrapped
        # here to watch it die. A loop that lets its outputs go pays
        # nothing (a raise costs a Python call while the events are on:
        # torch's no_grad raises a StopIteration at each step). A torch
        # without it: the events all the time.
        C = getattr(self.torch, "_C", None)
        orig = getattr(C, "_set_storage_access_error_msg", None)
        if orig is None:
            mon.set_events(tid, mon.events.RAISE)
            return
        from .hooks import _ABSENT  # (hooks imports this module)
        self._saved[(C, "_set_storage_access_error_msg")] = vars(C).get("_set_storage_access_error_msg", _ABSENT)
        rec = self

        def _set_storage_access_error_msg(t, msg, *rest, _orig=orig):
            out = _orig(t, msg, *rest)  # (torch's own, first and unchanged)
            try:
                rec._overwritten_output_made(t)
            except Exception:
                pass
            return out

        C._set_storage_access_error_msg = _set_storage_access_error_msg

    def _overwritten_output_made(self, t):
        """t's data now raises the overwritten error: the events on while
        it lives."""
        tid = self._raise_tool
        if tid is None:
            return
        r = weakref.ref(t, self._overwritten_output_died)
        self._overwritten[id(r)] = r
        sys.monitoring.set_events(tid, sys.monitoring.events.RAISE)

    def _overwritten_output_died(self, r):
        live = self._overwritten
        live.pop(id(r), None)
        if not live and self._raise_tool is not None:
            sys.monitoring.set_events(self._raise_tool, 0)

    def _unwatch_raises(self):
        tid, self._raise_tool = self._raise_tool, None
        if tid is None:
            return
        self._overwritten = {}  # (their callbacks go with them)
        mon = sys.monitoring
        mon.set_events(tid, 0)
        mon.register_callback(tid, mon.events.RAISE, None)
        mon.free_tool_id(tid)

    def _on_raise(self, code, offset, exc):
        """A raise in code at offset: recorded as a read when it is the
        overwritten error on a tree output a loaded value holds. Never
        raises (a failure is noted once in the trace)."""
        if not isinstance(exc, RuntimeError) or self._off:
            return
        msg = exc.args[0] if exc.args else None
        if type(msg) is not str or _OVERWRITTEN not in msg:
            return
        if getattr(exc, SEEN, False):
            return
        # A read method's error is recorded by its wrapper (busy, then
        # marked seen); one inside a tree call is the call's.
        if getattr(self.tls, "busy", False) or self._in_call():
            return
        frame = sys._getframe(1)
        try:
            if frame.f_code is not code:
                return
            name = self._overwritten_output(frame, code, offset)
            if name is None:
                return  # (the next frame out may hold it)
            mark_seen(exc)
            self._on_read(name, _error_text(exc))
        except Exception as e:
            mark_seen(exc)
            if not self._raise_failed:
                self._raise_failed = True
                try:
                    self.session.note("cgtrace: could not record an overwritten output's error: %s: %s"
                                      % (type(e).__name__, e))
                except Exception:
                    pass
        finally:
            frame = None

    def _overwritten_output(self, frame, code, offset):
        """The name of the first tree output, among the tensors the raising
        line loaded, whose data pointer raises the overwritten error."""
        Tensor = self.torch.Tensor
        session = self.session
        with self.lock:
            if self._pending or self._fq:
                self._settle()  # (the deferred calls renamed the outputs: named as they stand once written)
            for n in _loaded_names(code, offset):
                for t in _tensors(_value(frame, n), Tensor):
                    name = session.read_target(t, lambda: t.untyped_storage()._cdata)
                    if name is None:
                        continue
                    try:
                        t.data_ptr()
                    except RuntimeError as e:
                        if _OVERWRITTEN in str(e):
                            return name
        return None
