"""pool_leak: a pytest plugin that says what keeps a CUDA graph pool's
block alive when a test of PyTorch's test_cudagraph_trees.py ends with
live blocks (its tearDown's `all_live_block_count() == 0`).

Before each unittest tearDown it resets Dynamo (which shuts the tree
managers down), collects garbage, lists the active blocks of every
private pool's segments, and for each tensor or storage object on one of
them prints its referrers up the chain: Python containers, frames (their
code and line) and, where none holds it, that the reference is C++'s
(PyTorch keeps a storage's Python object alive while C++ holds the
storage: an autograd graph, the tree's cached tensors). Issue 33 item 2:
two tests of the suite ended with a live block only when recorded.

Load with `-p pool_leak` (this folder on PYTHONPATH); `gpu.sh pool-leak`
does, for the tests PEER_K names. The lines it prints start with
"[pool-leak]", on stderr (pytest -s)."""

import gc
import sys
import types

_done = set()

# Types of torch/_inductor/cudagraph_trees.py (and the graph they wrap)
# whose objects should all be gone after torch._dynamo.reset().
_TREE_TYPES = frozenset(("CUDAGraphTreeManager", "CUDAGraphNode", "CUDAWarmupNode", "CUDAGraph"))


def live_blocks(torch):
    """(address, size) of each active block of the private pools."""
    out = []
    for seg in torch.cuda.memory_snapshot():
        if seg["segment_pool_id"] == (0, 0):
            continue
        addr = seg["address"]
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                out.append((addr, b["size"]))
            addr += b["size"]
    return out


def describe(r):
    """One line for a referrer."""
    try:
        if isinstance(r, types.FrameType):
            return "frame %s %s:%d" % (r.f_code.co_name, r.f_code.co_filename, r.f_lineno)
        if isinstance(r, dict):
            return "dict of %d: %s" % (len(r), [str(k)[:40] for k in list(r)[:8]])
        if isinstance(r, (list, tuple, set, frozenset)):
            return "%s of %d" % (type(r).__name__, len(r))
        if isinstance(r, types.FunctionType):
            return "function %s (%s)" % (r.__qualname__, r.__code__.co_filename)
        if isinstance(r, types.CellType):
            return "closure cell"
        return "%s.%s" % (type(r).__module__, type(r).__qualname__)
    except Exception as e:  # (a referrer that cannot be described)
        return "%s (%s)" % (type(r).__name__, e)


def _say(*parts):
    print("[pool-leak]", *parts, file=sys.stderr)


def chain(obj, mine, depth=0, seen=None, limit=6):
    """Prints obj's referrers, then theirs, up to limit levels; mine holds
    the ids of this module's own lists, which are never shown."""
    seen = set() if seen is None else seen
    refs = gc.get_referrers(obj)
    mine.add(id(refs))
    refs = [r for r in refs if id(r) not in mine
            and not (isinstance(r, types.FrameType) and r.f_code.co_filename == __file__)]
    mine.add(id(refs))
    if not refs and depth == 0:
        _say("  no Python object refers to it: C++ holds it")
    for r in refs[:8]:
        _say("  " * (depth + 1) + "<- " + describe(r))
        if id(r) in seen or isinstance(r, types.ModuleType) or depth + 1 >= limit:
            continue
        seen.add(id(r))
        chain(r, mine, depth + 1, seen, limit)


def tree_outputs(torch):
    """Before the reset: every CUDAGraphNode alive, whether its manager's
    tree reaches it (the reset's shutdown frees the cached outputs only of
    those), and each output's (index, address, bytes, cached): the map
    from a live block back to the graph that made it. Returns the rows
    and weak references to the nodes, to say after the reset which
    survived it."""
    import weakref
    objs = gc.get_objects()
    nodes = [o for o in objs if type(o).__name__ == "CUDAGraphNode"]
    mgrs = [o for o in objs if type(o).__name__ == "CUDAGraphTreeManager"]
    del objs
    reached = set()
    for m in mgrs:
        todo = [n for ns in (getattr(m, "roots", None) or {}).values() for n in ns]
        while todo:
            n = todo.pop()
            reached.add(id(n))
            todo.extend(c for cs in n.children.values() for c in cs)
    rows, refs = [], []
    for n in nodes:
        outs = []
        cached = getattr(n, "cached_tensor_outputs", None) or []
        for i, md in enumerate(getattr(n, "outputs_metadata", None) or []):
            if not isinstance(md, dict):
                continue
            c = i < len(cached) and cached[i] is not None
            outs.append((i, md.get("data_ptr"), md.get("nbytes"), c))
        fid = getattr(getattr(n, "wrapped_function", None), "id", None)
        rows.append((getattr(getattr(n, "id", None), "id", None), getattr(fid, "id", fid), id(n) in reached, outs))
        try:
            refs.append(weakref.ref(n))
        except TypeError:
            refs.append(None)
    _say("before the reset: %d managers, %d nodes (%d reached from the roots)" % (len(mgrs), len(nodes), len(reached)))
    del nodes, mgrs
    return rows, refs


def owners(rows, refs, a, n):
    """The lines saying which node's output a live block [a, a+n) was."""
    out = []
    for (nid, fid, reached, outs), ref in zip(rows, refs):
        for i, ptr, size, cached in outs:
            if ptr is not None and a <= ptr < a + n:
                alive = ref is not None and ref() is not None
                out.append("output %d (%s bytes) of node %s, function %s: %s the roots, %s, node %s after the reset"
                           % (i, size, nid, fid, "reached from" if reached else "NOT reached from",
                              "cached" if cached else "not cached", "alive" if alive else "gone"))
    return out or ["no node's output (not made by a graph: an eager run inside the pool?)"]


def grad_holders(torch, live, objs):
    """Leaf tensors (parameters) whose .grad lies on a live block: a grad
    is held by its parameter in C++, so the storage shows no referrer."""
    import warnings
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for o in objs:
            try:
                if not isinstance(o, torch.Tensor) or not o.is_leaf:
                    continue
                g = o.grad
                if g is None:
                    continue
                p = g.untyped_storage().data_ptr()
            except Exception:  # (a tensor without storage)
                continue
            if any(a <= p < a + n for a, n in live):
                found.append(o)
    return found


def report(test_id):
    import torch
    try:
        rows, refs = tree_outputs(torch)
    except Exception as e:  # (a torch whose nodes look otherwise)
        _say("the tree's outputs could not be listed: %r" % (e,))
        rows, refs = [], []
    torch._dynamo.reset()
    gc.collect()
    live = live_blocks(torch)
    _say("%s: %d live blocks in the graph pools %s" % (test_id, len(live), [(hex(a), n) for a, n in live]))
    if not live:
        return
    for a, n in live:
        for line in owners(rows, refs, a, n):
            _say("block %#x: %s" % (a, line))
    objs = gc.get_objects()
    mine = {id(objs)}
    hits = []
    mine.add(id(hits))
    for o in objs:
        try:
            if isinstance(o, torch.Tensor):
                p = o.untyped_storage().data_ptr()
            elif isinstance(o, torch.UntypedStorage):
                p = o.data_ptr()
            else:
                continue
        except Exception:  # (a tensor without storage)
            continue
        if any(a <= p < a + n for a, n in live):
            hits.append(o)
    grads = grad_holders(torch, live, objs)
    mine.add(id(grads))
    # The test's own modules still alive: a module keeps its parameters,
    # and they their grads.
    mods = [o for o in objs if isinstance(o, torch.nn.Module)
            and "test_cudagraph" in (type(o).__module__ or "")]
    mine.add(id(mods))
    del objs
    _say("%d Python objects on them" % len(hits))
    _say("%d tensors whose .grad is on them, %d of the test's modules alive" % (len(grads), len(mods)))
    while grads:
        o = grads.pop()
        _say("%s %s whose grad is on a live block, refcount %d" % (type(o).__name__, tuple(o.shape), sys.getrefcount(o) - 2))
        chain(o, mine)
        o = None
    while mods:
        o = mods.pop()
        _say("module %s alive" % type(o).__qualname__)
        chain(o, mine, limit=4)
        o = None
    # The tree's own objects still alive after the reset: a node or a
    # manager kept by someone holds graphs, pools and cached tensors.
    tree = [o for o in gc.get_objects() if type(o).__name__ in _TREE_TYPES]
    mine.add(id(tree))
    _say("%d of the tree's objects alive: %s" % (len(tree), sorted(type(o).__name__ for o in tree)))
    for o in tree[:4]:
        _say(type(o).__name__)
        chain(o, mine, limit=3)
    del tree
    while hits:
        o = hits.pop()
        stor = o if isinstance(o, torch.UntypedStorage) else o.untyped_storage()
        try:
            uses = torch._C._storage_Use_Count(stor._cdata)
        except Exception:  # (a torch without it)
            uses = "?"
        _say("%s %s at %#x, refcount %d, storage use count %s" % (
            type(o).__name__, tuple(getattr(o, "shape", ())), stor.data_ptr(), sys.getrefcount(o) - 2, uses))
        stor = None
        chain(o, mine)
        o = None


def pytest_collection_modifyitems(items):
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is None or cls in _done or "tearDown" not in vars(cls):
            continue
        _done.add(cls)
        orig = cls.tearDown

        def tearDown(self, orig=orig):
            try:
                report(self.id())
            except Exception as e:  # (the report's own failure never fails a test)
                _say("report failed: %r" % (e,))
            return orig(self)
        cls.tearDown = tearDown
