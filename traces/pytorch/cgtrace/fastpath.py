"""The checks the _run wrapper's lean paths make at every call (hooks.py's
steady replay, freshq.py's call on a new input), as functions of what
their arming found: here in Python, the reference, and in _fastpath.c,
the same checks in C, compiled on first use where a C compiler and
Python's headers are (as Triton builds its launchers) and used instead.

Why C: on a GPU host torch's own call between two of the program's
evicts the caches, and every bytecode of the recorder's and every object
it reads is a miss there (BENCHMARKS.md, session 14); these checks are
most of the bytecodes a lean call runs. Each function reads, and never
changes, the recorder's state; each raises what the check it makes
raises (the caller catches, as before). load() says which one a
recording uses, and why (CGTRACE_FAST=0 asks for this one).

The functions and their contracts (the C module's are the same, tested
against these in tests/test_fastpath.py):

- steady_ok(lean, function_id, mgr, new_inputs, c, mc, left, probed,
  dead_objs, ptrs_equal, data_ptr): a steady replay's checks before the
  tree's call (the lean tuple: hooks._steady's arming).
- steady_after(lean, out, node, other, mgr, dead_objs): after it.
- frame_src(depth, code_ref, plan): the src of the frame depth frames
  above the caller's when it is of the plan's code, else None.
- probes_same(probes, vals): each probe called, and their values equal
  the ones recorded.
- kept_same(refs, new_inputs, kept, full, ptrs, ptrs_equal, data_ptr):
  the kept inputs are the same objects at the same data pointers.
- fresh_src(own, d, code_ref, src_lasti, plan, src): a lean fresh call's src
  (the tree's frame not this package's; the frame d above it at src).
- fresh_input(v, a, maps): the new input of the armed template, named by
  nothing: its untyped storage, or None.
- polled_alive(polled): every polled name of a lean fresh call alive.
- fresh_deaths(dead_objs, k, fq_wrs, held, entries, mc, steps): the
  deaths since its last call, each one the queue may write, by step.
- fresh_after(a, node, other, out, mgr, dead_objs): after its tree call.
"""

import hashlib
import importlib.machinery
import importlib.util
import operator
import os
import subprocess
import sys
import sysconfig
import tempfile

_is, _call = operator.is_, operator.call
_refcount, _getframe = sys.getrefcount, sys._getframe

# The C module's functions and their version: a cached build of another
# version of _fastpath.c is never loaded (its name carries the source's
# hash too).
API = 2

# The lean tuple of a steady replay (hooks._steady): the positions read.
L_FID, L_PLAN, L_MREF, L_LOW, L_NIN, L_IN_REFS, L_IN_PTRS, L_IN_IDX, L_POLLED, L_USES, L_NODE_REF, L_NOUT, \
    L_CKPT, L_OUT_REFS, L_WRAPPERS = range(15)
# The armed tuple of a lean fresh call (freshq._fq_arm): the positions read.
A_CLS, A_DT, A_SHAPE, A_STRIDE, A_DEV, A_NBYTES = range(13, 19)
A_NODE_REF, A_CKPT, A_OUT_REF, A_TREE_REF = range(23, 27)


def steady_ok(lean, function_id, mgr, new_inputs, c, mc, left, probed, dead_objs, ptrs_equal, data_ptr):
    """Whether a steady replay of lean's plan may be deferred, as far as
    its checks before the tree's call go: the armed function, no 64th
    step since the arming (c: one down a step, below low past a 64th) and
    the knobs' probes read within 64 calls (left, or at this call:
    probed), the same manager, the memo's objects at the same data
    pointers, nothing died, and each polled output alive by its refcount
    (its tree's rule: one held only by the tree's cache is the general
    path's to judge). When the plan polls other names (lean's polled is
    None) the caller asks them."""
    if not (function_id is lean[L_FID] and lean[L_LOW] <= c <= mc and (left > 0 or probed)
            and lean[L_MREF]() is mgr and len(new_inputs) == lean[L_NIN]
            and all(map(_is, map(_call, lean[L_IN_REFS]), new_inputs))
            and (ptrs_equal(new_inputs, lean[L_IN_PTRS], lean[L_IN_IDX]) if ptrs_equal is not None
                 else list(map(data_ptr, new_inputs)) == lean[L_IN_PTRS])
            and not dead_objs):
        return False
    polled = lean[L_POLLED]
    if polled is not None:
        uses = lean[L_USES]
        for r in polled:
            o = r()
            # (The count is one more for o, and one more for the call's
            # argument: the tree's own test counts its cache's reference
            # and, with uses, c10's.)
            n = 0 if o is None else _refcount(o)
            if n <= 3 or (n == 4 and uses and o._use_count() > 1):
                return False
    return True


def steady_after(lean, out, node, other, mgr, dead_objs):
    """Whether the tree's call did only what the plan says: its node
    replayed (node: execute_node's) and nothing else (other), handing out
    the plan's objects through the plan's wrappers, no checkpoint taken,
    nothing died."""
    return (not other and node is lean[L_NODE_REF]() and type(out) is list and len(out) == lean[L_NOUT]
            and mgr.debug_checkpointing_counter == lean[L_CKPT] and not dead_objs
            and all(map(_is, map(_call, lean[L_OUT_REFS]), out)) and node.outputs_weakrefs == lean[L_WRAPPERS])


def frame_src(depth, code_ref, plan):
    """The src a general call of plan saw, for the frame depth frames
    above the caller's (0: the caller's own), when it is of the plan's
    code (code_ref, a weak reference) at a line a general call saw; else
    None (a shallower stack too)."""
    try:
        f = _getframe(depth + 1)
    except ValueError:
        return None
    if f.f_code is not code_ref():
        return None
    src = plan.src_lasti.get(f.f_lasti)
    if src is None:
        src = plan.src_of(f)
    return src


def probes_same(probes, vals):
    """Every probe called (a knob's value read as torch reads it), and the
    values equal vals, the ones the general path last read."""
    return list(map(_call, probes)) == vals


def kept_same(refs, new_inputs, kept, full, ptrs, ptrs_equal, data_ptr):
    """The inputs at positions kept are refs' objects, at the data
    pointers full holds at those positions (ptrs, in kept's order, for a
    torch without ptrs_equal)."""
    return (all(map(_is, map(_call, refs), map(new_inputs.__getitem__, kept)))
            and (ptrs_equal(new_inputs, full, kept) if ptrs_equal is not None
                 else list(map(data_ptr, map(new_inputs.__getitem__, kept))) == ptrs))


def fresh_src(own, d, code_ref, src_lasti, plan, src):
    """Whether a lean fresh call's src is src: the frame that called the
    _run wrapper (two above the caller's) is not this package's (own: by
    file name), and the one d above it is of the plan's code at a line
    whose src is src (src_lasti: the plan's map by f_lasti when it was
    armed; else plan.src_of). Raises ValueError for a shallower stack."""
    f = _getframe(3)
    if own.get(f.f_code.co_filename) is not False:
        return False
    if d:
        f = _getframe(3 + d)
    if f.f_code is not code_ref():
        return False
    return src_lasti.get(f.f_lasti, src_lasti) is src or plan.src_of(f) is src


def fresh_input(v, a, maps):
    """v's untyped storage when v is a new input of the armed template
    (a, freshq._fq_arm's: its class, layout strided, dtype, shape,
    strides, offset 0, device, a storage of the same size) that no tensor
    the trace or the queue names is, over a storage none is over; else
    None. maps: (strided, by_obj_entry, by_view, entries, dead_cached,
    by_storage, fq_ids, fq_stor)."""
    strided, by_obj_entry, by_view, entries, dead_cached, by_storage, fq_ids, fq_stor = maps
    shape, stride = a[A_SHAPE], a[A_STRIDE]
    if (v.__class__ is not a[A_CLS] or v.layout is not strided or v.dtype is not a[A_DT] or v.shape != shape
            or v.stride() != stride or v.storage_offset() != 0 or v.get_device() != a[A_DEV]):
        return None
    stor = v.untyped_storage()
    cd = stor._cdata
    oid = id(v)
    e = by_obj_entry.get(oid)
    if ((e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is v)
            or stor.nbytes() != a[A_NBYTES] or by_view.get((cd, 0, shape, stride)) in entries
            or (cd, 0, shape, stride) in dead_cached or by_storage.get(cd)):
        return None
    e = fq_ids.get(oid)
    if e is not None and e.wr() is v:
        return None
    e = fq_stor.get(cd)
    if e is not None and not e.gone:
        return None
    return stor


def polled_alive(polled):
    """Every polled name alive: polled holds, for each, (its object's weak
    reference where its tree's wrapper judges it by refcount, else None;
    whether that counts c10's reference too; its probe's alive). A count
    that says alive for sure is enough; any other asks alive()."""
    for r, uses, alive in polled:
        if r is not None:
            o = r()
            # (one more for o, one more for the call's argument)
            n = 0 if o is None else _refcount(o)
            o = None
            if n > 4 or (n == 4 and not (uses and r()._use_count() > 1)):
                continue
        if not alive():
            return False
    return True


def fresh_deaths(dead_objs, k, fq_wrs, held, entries, mc, steps):
    """The first k deaths of dead_objs ((weak reference, mark-step count
    then) each) grouped by the steps of the call's steps before each
    ({j: [(wr, its queued call or entry)]}), when each is a queued input's
    whose storage died with it (not one queued and gone already, nor
    bound since: held), or a named tensor's (held names it: the last
    input of a queue written at its bound) not an output's, its storage
    gone; else None."""
    groups = {}
    for wr, when in dead_objs[:k]:
        e = fq_wrs.get(id(wr))
        if e is None:
            e = entries.get(held.get(id(wr)))
            if e is None or e.wr is not wr or e.kind == "out" or e.fact.alive():
                return None
        elif e.gone or id(wr) in held or not e.sref.expired():
            return None
        j = min(max(0, mc - when), steps)
        g = groups.get(j)
        if g is None:
            groups[j] = [(wr, e)]
        else:
            g.append((wr, e))
    return groups


def fresh_after(a, node, other, out, mgr, dead_objs):
    """Whether a lean fresh call's tree call did only its plan's replay:
    its node (execute_node's) and nothing else, one output, the plan's
    object through the plan's wrapper, no checkpoint taken, nothing
    died."""
    if (other or node is None or node is not a[A_NODE_REF]() or type(out) is not list or len(out) != 1
            or mgr.debug_checkpointing_counter != a[A_CKPT] or dead_objs):
        return False
    w = node.outputs_weakrefs
    return len(w) == 1 and a[A_OUT_REF]() is out[0] and a[A_TREE_REF] is w[0]


# -- The C module: built once per source and interpreter, cached. --

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fastpath.c")
_loaded = {}


def _cache_dir():
    d = os.environ.get("CGTRACE_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cgtrace")


def _build(src, so):
    """Compiles src into the extension so, whole or not at all (a build
    in another process meanwhile leaves one of the two). Raises OSError or
    RuntimeError (the compiler's message) when it cannot."""
    inc = sysconfig.get_paths()["include"]
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    os.makedirs(os.path.dirname(so), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(so), suffix=".so.tmp")
    os.close(fd)
    cmd = cc + ["-O2", "-shared", "-fPIC", "-I", inc, src, "-o", tmp]
    if sys.platform == "darwin":
        cmd[1:1] = ["-undefined", "dynamic_lookup"]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        if p.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(cmd[:1]), p.stdout.decode("utf-8", "replace").strip()[-400:]))
        os.replace(tmp, so)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load():
    """(checks, why): the C module when it can be had, else this module,
    and why not (None with the C module). Built on the first call of a
    machine and interpreter (a second or so), into CGTRACE_CACHE (default
    ~/.cache/cgtrace), then loaded from there."""
    if "got" in _loaded:
        return _loaded["got"]
    got = _load()
    _loaded["got"] = got
    return got


def _load():
    mod = sys.modules[__name__]
    if os.environ.get("CGTRACE_FAST", "1") == "0":
        return mod, "CGTRACE_FAST=0"
    try:
        with open(_SRC, "rb") as fh:
            src = fh.read()
        key = hashlib.sha256(src + sys.version.encode() + sysconfig.get_config_var("EXT_SUFFIX").encode())
        so = os.path.join(_cache_dir(), "_cgtrace_fastpath-%s%s" % (key.hexdigest()[:16],
                                                                   sysconfig.get_config_var("EXT_SUFFIX")))
        if not os.path.exists(so):
            _build(_SRC, so)
        loader = importlib.machinery.ExtensionFileLoader("_cgtrace_fastpath", so)
        spec = importlib.util.spec_from_file_location("_cgtrace_fastpath", so, loader=loader)
        c = importlib.util.module_from_spec(spec)
        loader.exec_module(c)
        if getattr(c, "API", None) != API:
            return mod, "%s: API %r, not %d" % (so, getattr(c, "API", None), API)
        return c, None
    except Exception as e:  # (no compiler, no headers, a read-only cache: the Python checks)
        return mod, "%s: %s" % (type(e).__name__, e)
