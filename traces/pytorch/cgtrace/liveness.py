"""Liveness as the tree judges it: a named tensor's probe (_Probe), the
rule a tree wrapper's check of a cached output follows (_refcount_rule),
and a tree manager's counts (_tree_stats). Works on the objects it is
handed; imports no torch."""

import sys

from . import torch_api
from .jsonl import SMALL_TENSOR


class _Probe:
    """Whether a named tensor is alive, as the tree would judge it.

    An output of a replay that PyTorch caches (the same tensor object handed
    out on every replay) is held by the tree itself, so neither the object nor
    its storage ever dies on its own. PyTorch judges it through the
    StorageWeakRefWrapper it keeps in node.outputs_weakrefs, whose extra check
    discounts the tree's own references; that wrapper is asked directly
    (holding no reference to the tensor meanwhile), so the recorder's view
    cannot drift from the one the tree's decisions use. Everything else is
    alive while its object is, or, once the object is gone (autograd unpacks
    saved tensors into other objects), while its storage is."""

    __slots__ = ("wr", "sref", "tree_ref", "tls", "fact", "check", "rule")

    def __init__(self, wr, sref, tls=None):
        self.wr, self.sref, self.tree_ref = wr, sref, None
        self.tls = tls
        self.fact = None  # the recorder's _fact, for base()
        # The tree wrapper's check this probe last read, and its rule
        # (_refcount_rule): a name polled at every event reads the rule
        # again only when the wrapper's check is another object.
        self.check = self.rule = None

    def read_values(self):
        """The values of a small tensor, read as the recorder's own read (not
        the program's: no `read` record)."""
        obj = self.wr()
        if obj is None or obj.numel() > SMALL_TENSOR:
            return None
        tls = self.tls
        busy = getattr(tls, "busy", False)
        tls.busy = True
        try:
            return host_values(obj)
        finally:
            tls.busy = busy

    def base(self):
        """The Fact of the tensor this one is a view of (tensor._base)."""
        obj = self.wr()
        b = getattr(obj, "_base", None) if obj is not None else None
        return self.fact(b) if b is not None and self.fact is not None else None

    def storage_alive(self):
        return not self.sref.expired()

    def alive(self):
        w = self.tree_ref
        check = w.extra_ref_check if w is not None else None
        if check is not None:
            # Alive for sure while something besides the tree's cache holds
            # the cached output, by the tree's own test (_refcount_rule): the
            # count here is one more, for o, and with USE_COUNT one more
            # again while c10 holds it too. Otherwise the tree is asked
            # (torch's Python: a few microseconds at every poll of every
            # event).
            if check is self.check:
                rule = self.rule
            else:
                rule = self.rule = _refcount_rule(w)
                self.check = check
            if rule:
                o = self.wr()
                if o is not None:
                    n = sys.getrefcount(o)
                    if n > 4 or (n == 4 and not (rule == USE_COUNT and o._use_count() > 1)):
                        return True
                o = None
            return not w.expired()
        if self.wr() is not None:
            return True
        return not self.sref.expired()


def watch_dead(entries):
    """The entries of the polled names (Session._watch's values) whose
    tensor is dead now, as each one's fact.alive() says, in their order;
    None when every one is alive. (The C reads the count that says alive
    for sure in place, where the probe read its tree wrapper's rule for
    the same check already: _Probe.alive's first branch.)"""
    dead = None
    for e in entries:
        if not e.fact.alive():
            if dead is None:
                dead = [e]
            else:
                dead.append(e)
    return dead


def host_values(obj):
    """obj's elements as floats, copied to the host before anything else is
    done to them: the recorder's read allocates nothing on obj's device, so
    the caching allocator and what the memory it hands out next holds stay
    as the program left them (a program that reads memory it never wrote,
    as some of PyTorch's own tests do, reads what it would unrecorded). A
    device tensor that is not contiguous (a reshape or a copy of it would
    allocate there) is copied as the bytes of the span it covers, then
    viewed with its own shape and strides on the host."""
    t = obj.detach()
    contiguous = getattr(t, "is_contiguous", None)
    if getattr(t, "is_cuda", False) and contiguous is not None and not contiguous():
        t = torch_api.span_to_host(t)
    else:
        t = t.cpu()
    return [float(x) for x in t.reshape(-1).float().tolist()]


_RULES = {}  # code object of a tree's extra_ref_check -> its _refcount_rule

# What _refcount_rule finds a tree's check of a cached output to be.
NO_RULE = 0  # another shape: the deferred replay's poll asks the tree
REFCOUNT = 1  # dead once its refcount is 2 (torch before 2.11)
USE_COUNT = 2  # dead once its refcount is 2, or 3 while c10 holds the tensor too (2.11)


def _refcount_rule(w):
    """How the tree's wrapper w of a cached output judges it dead, read
    from its check's code (its small int constants, and the names it
    reads). CUDAGraphNode's check_refcount takes sys.getrefcount of the
    tree's own list entry, one more than the holders it has:
      - REFCOUNT: `get_output_refcount(i) == 2`, dead when the tree's list
        holds it alone;
      - USE_COUNT (2.11): that, or `== 3` when the tensor's
        `_use_count() > 1` (c10 holds it too, with one Python reference).
    Either way sys.getrefcount(obj_ref()) is the count the tree sees, plus
    one for the local holding it: a count past the dead one is alive for
    sure without torch's Python (the deferred replay's poll). A check of
    another shape is NO_RULE, asked of the tree as before."""
    check = getattr(w, "extra_ref_check", None)
    fn = getattr(check, "func", check)
    code = getattr(fn, "__code__", None)
    if code is None:
        return NO_RULE
    rule = _RULES.get(code)
    if rule is None:
        consts = {c for c in code.co_consts if type(c) is int}
        if consts == {2}:
            rule = REFCOUNT
        elif consts == {1, 2, 3} and "_use_count" in code.co_names:
            rule = USE_COUNT
        else:
            rule = NO_RULE
        _RULES[code] = rule
    return rule


def _cached_output(fact):
    """Whether fact is judged by a tree wrapper that discounts the tree's
    own reference: a replay's cached output (the same object every replay),
    which the tree counts dead once the program lets go of it, even while
    autograd still holds it."""
    p = fact.probe
    w = p.tree_ref if p is not None else None
    return w is not None and getattr(w, "extra_ref_check", None) is not None


def _tree_stats(mgr):
    """Graph nodes, roots and checkpoints of one tree manager."""
    roots = [n for ns in (mgr.roots or {}).values() for n in ns]
    count, stack = 0, list(roots)
    while stack:
        n = stack.pop()
        count += 1
        stack.extend(c for cs in n.children.values() for c in cs)
    return {"nodes": count, "roots": len(roots), "checkpoints": mgr.debug_checkpointing_counter}
