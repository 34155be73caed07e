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
- fresh_src(own, d, code_ref, src_lasti, plan, src, up): a lean fresh
  call's src (the tree's frame, up above the caller's, not this
  package's; the frame d above it at src).
- fresh_input(v, a, maps): the new input of the armed template, named by
  nothing: (what its storage's weak reference is made of, the storage's
  handle, its data pointer or None), or None.
- polled_alive(polled): every polled name of a lean fresh call alive.
- watch_dead(entries): the session's polled names dead now.
- bind_all(maps, names, facts, kind, takeover, order) and
  forget_all(maps, names): the session's names bound and unbound, each
  in every map that finds it (names.py).
- fresh_deaths(dead_objs, k, fq_wrs, held, entries, mc, steps): the
  deaths since its last call, each one the queue may write, by step.
- fresh_queue(ctx, a, mgr, new_inputs): a lean fresh call checked with
  the above and queued, or declined (changing nothing).
- fresh_after(a, node, other, out, mgr, dead_objs): after its tree call.
- replay_run(run, k, used, prefix, sfx, prev, head, mid, reads): deferred replays' records.
- fq_run(q, k, st, w, reads) and fq_tail(t, lead, st, w): the queue's writer
  (freshq._fq_write) for its common call, and any call's call line.

The C module's read_run(ctx, t, orig, args, kwargs) is the host-read
wrapper's body (hooks._install_reads, whose Python is its reference,
tested against it in tests/test_recorder_fresh.py): it has no function
here, since the wrapper runs its own Python where C is not built.

Among the C module's types besides: Runner (hooks._run's body), Died
(Session._died), Noter (hooks' execute_node wrapper), Compact (the
Runner's queued calls as entries, made _Queued objects when Python looks:
freshq._fq_sync; it has no Python here, where no Runner runs) and RLock
(threading.RLock's lock, Recorder.lock, which the Runner takes and lets
go in place), and JournalWriter (jsonl._Journal's writer thread, which
writes a queue's bound batch without the GIL; without it every batch is
written in place).
"""

import operator
import os
import sys
import weakref

from ._pycompat import op_call
from .deferred import _STEP_LINES, _call_tail
from .jsonl import _read_lines
from .liveness import watch_dead  # noqa: F401 (the Python of the C's watch_dead: the session's own)
from .names import bind_all, forget_all  # noqa: F401 (the Python of the C's: the session's own)

_is, _call = operator.is_, op_call
_refcount, _getframe = sys.getrefcount, sys._getframe

# The C module's functions and their version: a cached build of another
# version of _fastpath.c is never loaded (its name carries the source's
# hash too).
API = 11

# The lean tuple of a steady replay (hooks._steady): the positions read.
L_FID, L_PLAN, L_MREF, L_LOW, L_NIN, L_IN_REFS, L_IN_PTRS, L_IN_IDX, L_POLLED, L_USES, L_NODE_REF, L_NOUT, \
    L_CKPT, L_OUT_REFS, L_WRAPPERS = range(15)
# The armed tuple of a lean fresh call (freshq._fq_arm): the positions read.
A_FID, A_FS, A_PLAN, A_TMPL, A_SRC, A_MREF, A_LOW, A_NIN, A_KEPT, A_REFS, A_PTRS, A_FULL, A_I, A_CLS, A_DT, \
    A_SHAPE, A_STRIDE, A_DEV, A_NBYTES, A_SRC_D, A_CODE_REF, A_SRC_LASTI, A_POLLED, A_NODE_REF, A_CKPT, \
    A_OUT_REF, A_TREE_REF, A_SPEC = range(28)


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


def fresh_src(own, d, code_ref, src_lasti, plan, src, up):
    """Whether a lean fresh call's src is src: the frame that called the
    _run wrapper (up frames above the caller's) is not this package's
    (own: by file name), and the one d above it is of the plan's code at
    a line whose src is src (src_lasti: the plan's map by f_lasti when it
    was armed; else plan.src_of). Raises ValueError for a shallower
    stack."""
    f = _getframe(up + 1)
    if own.get(f.f_code.co_filename) is not False:
        return False
    if d:
        f = _getframe(up + 1 + d)
    if f.f_code is not code_ref():
        return False
    return src_lasti.get(f.f_lasti, src_lasti) is src or plan.src_of(f) is src


def fresh_input(v, a, maps):
    """(sobj, cd, ptr) when v is a new input of the armed template (a,
    freshq._fq_arm's: its class, layout strided, dtype, shape, strides,
    offset 0, device, a storage of the same size) that no tensor the
    trace or the queue names is, over a storage none is over; else None.
    sobj is what the storage's weak reference is made of (v's untyped
    storage; with new_input, v: StorageRefs' make), cd the storage's
    handle, ptr v's data pointer (None: not read yet). maps: (strided,
    by_obj_entry, by_view, entries, dead_cached, by_storage, fq_ids,
    fq_stor, new_input): new_input is cpp.py's (the reads through
    libtorch's C++ API), or None (through torch's bindings)."""
    strided, by_obj_entry, by_view, entries, dead_cached, by_storage, fq_ids, fq_stor, new_input = maps
    shape, stride = a[A_SHAPE], a[A_STRIDE]
    if new_input is not None:
        # (the class by type: a __class__ that says otherwise is an object
        # the lean path declines)
        if type(v) is not a[A_CLS]:
            return None
        got = new_input(v, a[A_DT], shape, stride, a[A_DEV], a[A_NBYTES])
        if got is None:
            return None
        cd, ptr = got
        sobj = v
    else:
        if (v.__class__ is not a[A_CLS] or v.layout is not strided or v.dtype is not a[A_DT] or v.shape != shape
                or v.stride() != stride or v.storage_offset() != 0 or v.get_device() != a[A_DEV]):
            return None
        sobj = v.untyped_storage()
        cd = sobj._cdata
        ptr = None
    oid = id(v)
    e = by_obj_entry.get(oid)
    if ((e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is v)
            or (new_input is None and sobj.nbytes() != a[A_NBYTES]) or by_view.get((cd, 0, shape, stride)) in entries
            or (cd, 0, shape, stride) in dead_cached or by_storage.get(cd)):
        return None
    e = fq_ids.get(oid)
    if e is not None and e.wr() is v:
        return None
    e = fq_stor.get(cd)
    if e is not None and not e.gone:
        return None
    return sobj, cd, ptr


def polled_alive(polled):
    """Every polled name alive: polled holds, for each, (its object's weak
    reference where its tree's wrapper judges it by refcount, or where no
    tree wrapper judges it (uses None), else None; whether that counts
    c10's reference too; its probe's alive). A count that says alive for
    sure is enough, and with uses None the object alive (_Probe.alive's
    last branch); any other asks alive()."""
    for r, uses, alive in polled:
        if r is not None:
            o = r()
            if uses is None:
                if o is not None:
                    continue
                if not alive():
                    return False
                continue
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


def fresh_queue(ctx, a, mgr, new_inputs):
    """A lean fresh call's part before the tree's call (freshq's
    fresh_run calls it, in its frame's place): the call checked against
    what the arming found (a, freshq._fq_arm's tuple), and queued: its
    _Queued made (the new input's weak references, storage, data
    pointer; its steps, src, generation; the deaths before it), the deaths
    taken off dead_objs and the queued inputs among them marked gone, the
    step count noted, the queue's maps of it filled. Returns the _Queued;
    declined (ctx's) having changed nothing, when the call is not one the
    lean path takes (an input or frame it cannot read too); None when the
    recorder failed while queueing it (rec._fail: the call runs
    unrecorded). Past a 64th step since the arming, hot.fql is armed for
    the next 64 (the caller reads it again). ctx: (hot, box, knobs, own,
    maps, entries, dead_objs, held, died, fq_ids, fq_wrs, fq_stor,
    ptrs_equal, data_ptr, sweak, Queued, gen, rec, declined, versioned)."""
    (hot, box, knobs, own, maps, entries, dead_objs, held, died, fq_ids, fq_wrs, fq_stor, ptrs_equal, data_ptr,
     sweak, Queued, gen, rec, declined, versioned) = ctx
    c = box.mark_step_counter
    mc = hot.mark_counter
    low = a[A_LOW]
    try:
        # The step counter not back up (a reset), and past a 64th step
        # since the arming no knob moved (as _steady looks at them there:
        # what the general path's look would find writes nothing then),
        # and within the 4096 steps; the knobs' probes (versioned: every
        # knob's write through its module is counted and disarms the queue,
        # so only past a 64th step or call, as _steady reads them, for a
        # write past the modules' __setattr__; else at every call, as
        # _fresh_call reads them); the manager, the kept inputs by
        # identity and data pointer; the src, as _fresh_call_check finds
        # it (three frames up: this one's, fresh_run's, _run's).
        due = not versioned or c < low or hot.left <= 0
        if (c > mc or a[A_MREF]() is not mgr or len(new_inputs) != a[A_NIN]
                or (c < low and (c // 4096 != mc // 4096 or knobs.moved(True)))
                or (due and not probes_same(knobs.probes, knobs.probe_vals))
                or not kept_same(a[A_REFS], new_inputs, a[A_KEPT], a[A_FULL], a[A_PTRS], ptrs_equal, data_ptr)
                or not fresh_src(own, a[A_SRC_D], a[A_CODE_REF], a[A_SRC_LASTI], a[A_PLAN], a[A_SRC], 3)):
            return declined
        # The new input, every polled name alive, the deaths since the
        # last call each one the queue may write.
        v = new_inputs[a[A_I]]
        got = fresh_input(v, a, maps)
        if got is None or not polled_alive(a[A_POLLED]):
            return declined
        sobj, cd, ptr = got
        oid = id(v)
        groups = None
        if dead_objs:
            k = len(dead_objs)
            groups = fresh_deaths(dead_objs, k, fq_wrs, held, entries, mc, mc - c)
            if groups is None:
                return declined
    except Exception:
        return declined
    try:
        if c < low:  # (every knob looked at: armed for the next 64 steps' block)
            hot.fql = a[:A_LOW] + (c - (c & 63),) + a[A_LOW + 1:]
        if versioned:
            hot.left = 64 if due else hot.left - 1
        t = Queued()
        t.steps = mc - c
        t.tmpl = a[A_TMPL]
        t.src = a[A_SRC]
        t.inv = gen.generation
        t.oid = oid
        t.wr = wr = weakref.ref(v, died)
        t.sref = sweak(sobj)
        t.ptr = v.data_ptr() if ptr is None else ptr
        t.cd = cd
        t.spec = a[A_SPEC]
        t.gone = False
        t.groups = groups
        v = sobj = got = None
        if groups is not None:
            del dead_objs[:k]
            for g in groups.values():
                for _, e in g:
                    if type(e) is Queued:
                        e.gone = True
        hot.mark_counter = c
        fq_ids[oid] = t
        fq_wrs[id(wr)] = t
        fq_stor[cd] = t
    except Exception as err:
        v = sobj = got = None  # (the input's life is the program's)
        rec._fail("before a call", err)
        return None
    return t


def replay_run(run, k, used, prefix, sfx, prev, head, mid, reads):
    """The records of a run of deferred replays of one plan (deferred's
    _write_run), as the lines of one string: for each (plan, steps, inv,
    src) of run, its steps, its call line (head, its output's name:
    prefix + str(k) + sfx, k counting up, its invocation and src), its
    expect and the del of the output's name before (prev, then each of
    the names; mid: the expect's line and the del's head); after the
    i-th, the host reads queued behind it (reads: {i: [each one's src,
    _is_src's]}, or None), each a read of its output and an expect
    (jsonl._read_lines). Returns (the string, the last name, the steps
    in all), or None when used (the session's names_used) holds one of
    the names (a name _fresh made: output names are not kept)."""
    if reads is not None and type(reads) is not dict:
        raise TypeError("replay_run: reads, a dict or None expected")
    names = [prefix + str(j) + sfx for j in range(k, k + len(run))]
    if not used.isdisjoint(names):
        return None
    out = []
    for i, ((_, steps, inv, src), n) in enumerate(zip(run, names)):
        line = _STEP_LINES * steps + head + n + _call_tail(inv, src) + mid + prev + '"]}'
        got = reads.get(i) if reads else None
        if got is not None:
            for s in got:
                if not _is_src(s):
                    raise TypeError("reads: a src (None or (dict, JSON)) expected")
                line += "\n" + _read_lines(n, s)
        out.append(line)
        prev = n
    return "\n".join(out), prev, sum(tok[1] for tok in run)


def fq_tail(t, lead, st, w):
    """A queued call's call line, expect and the del of the output's name
    before, after lead (its records before those, as lines): one element
    of the trace's records. st: the writer's [order, epoch, seed, dels,
    calls, the output's name before] (calls, order and the name move); w:
    (fresh_next, used, base, recs, by_view, by_obj, by_obj_entry, trace,
    pre, post, prefix, sfx, mid, session, _Queued): freshq._fq_write's."""
    w[3].append(lead + _call_line(t, st, w))


def _call_line(t, st, w):
    """fq_tail's line without its lead."""
    used, pre, post, prefix, sfx, mid, session = w[1], w[8], w[9], w[10], w[11], w[12], w[13]
    st[4] += 1
    out = prefix + str(st[4]) + sfx  # (_replay_names', for one output)
    if out in used:  # (a name _fresh made: output names are not kept)
        out = session._fresh(out)
    line = pre + t.name + post + out + _call_tail(t.inv, t.src) + mid + st[5] + '"]}'
    st[0] += 1
    st[5] = out
    return line


def _is_src(src):
    """Whether src is a read's src as _src_of gives it: None, or (dict,
    its JSON)."""
    return src is None or (type(src) is tuple and len(src) >= 2 and isinstance(src[1], str))


def _fq_reads_ok(rd, Queued):
    """Whether fq_run writes the host reads rd queued behind a call
    ([(src, gone)]): each src None or (dict, JSON), its deaths none or one
    queued input's."""
    if type(rd) is not list:
        return False
    for item in rd:
        if type(item) is not tuple or len(item) != 2:
            return False
        src, gone = item
        if not _is_src(src):
            return False
        if gone is not None and (type(gone) is not list or len(gone) != 1 or type(gone[0]) is not tuple
                                 or len(gone[0]) != 2 or type(gone[0][1]) is not Queued):
            return False
    return True


def _fq_read_lines(rd, st):
    """fq_run's lines of the reads rd after their call's, as
    freshq._fq_reads_write writes them: each its queued input's del (st's
    epoch and dels moved), the read of the call's output (st's last name)
    and its expect."""
    out = ""
    for src, gone in rd:
        if gone is not None:
            out += '\n{"op": "del", "names": ["' + gone[0][1].name + '"]}'
            st[1] += 1
            st[3] += 1
        out += "\n" + _read_lines(st[5], src)
    return out


def fq_run(q, k, st, w, reads):
    """Writes the queued calls q[k], q[k+1], ... while each is the common
    one (a lean call's, its input dead within the queue, its deaths none
    or one such input's), as _fq_before and fq_tail would: its steps and
    death, its tensor's line (named as Session._fresh names, never
    bound: of _bind and _forget only the stale keys they leave go), its
    call, and the host reads queued behind it (reads: id(call) -> [(src,
    gone)], or None; _fq_reads_ok's kind, else the call is left to
    fq_tail's way); their records one element of recs (each call's lines
    as fq_tail's, the calls' separated by a line end, as recs' are when
    written). Returns the index of the first it did not write (len(q)
    when it wrote them all). st and w: fq_tail's."""
    if reads is not None and type(reads) is not dict:
        raise TypeError("fq_run: reads, a dict or None expected")
    fresh_next, used, base, by_view, by_obj, by_obj_entry, trace, Queued = (
        w[0], w[1], w[2], w[4], w[5], w[6], w[7], w[14])
    n = len(q)
    block = []
    try:
        while k < n:
            t = q[k]
            rd = reads.get(id(t)) if reads else None
            if rd is not None and not _fq_reads_ok(rd, Queued):
                return k
            spec = t.spec
            groups = t.groups
            if spec is None or not t.gone:
                return k
            if groups is None:
                lead = _STEP_LINES * t.steps
            else:
                if len(groups) != 1:
                    return k
                (j, gone), = groups.items()
                if len(gone) != 1 or type(gone[0][1]) is not Queued:
                    return k
                # (_fq_before's loop: the steps before the death, its del, the
                # rest; a negative count repeats nothing.)
                st[1] += 1
                st[3] += 1
                lead = (_STEP_LINES * j + '{"op": "del", "names": ["' + gone[0][1].name + '"]}\n'
                        + _STEP_LINES * (t.steps - j))
            i = fresh_next.get(base, 0)  # (Session._fresh's)
            name = "%s_%d" % (base, i) if i else base
            while name in used:
                i += 1
                name = "%s_%d" % (base, i)
            fresh_next[base] = i + 1
            used.add(name)  # (a UsedNames holds it by the number already)
            st[2] += 1
            tmpl = t.tmpl
            lead += tmpl[0] + name + tmpl[1] + str(st[2]) + tmpl[2] + "\n"
            if spec[2]:
                trace.devices = max(trace.devices, spec[2] + 1)
            st[0] += 1
            st[1] += 1
            t.name, t.order = name, st[0]
            by_view.pop((t.cd, 0, spec[0], spec[1]), None)
            by_obj.pop(t.oid, None)
            by_obj_entry.pop(t.oid, None)
            line = lead + _call_line(t, st, w)
            block.append(line if rd is None else line + _fq_read_lines(rd, st))
            k += 1
        return k
    finally:
        if block:
            w[3].append("\n".join(block))


def fresh_after(a, node, other, out, mgr, dead_objs):
    """Whether a lean fresh call's tree call did only its plan's replay:
    its node (execute_node's) and nothing else, one output, the plan's
    object through the plan's wrapper, no checkpoint taken, nothing
    died."""
    if not (not other and node is not None and node is a[A_NODE_REF]() and type(out) is list and len(out) == 1
            and mgr.debug_checkpointing_counter == a[A_CKPT] and not dead_objs):
        return False
    w = node.outputs_weakrefs
    return len(w) == 1 and a[A_OUT_REF]() is out[0] and a[A_TREE_REF] is w[0]


# -- The C module: built once per source and interpreter, cached. --

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fastpath.c")
_loaded = {}


# (The loader's modules are imported by it: a recording that never
# builds, or a program that only imports cgtrace, does not pay for them.)


def _cache_dir():
    d = os.environ.get("CGTRACE_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cgtrace")


def _compiler(var="CC", names=("cc", "gcc", "clang"), what="C"):
    """A compiler's command: the variable var's, else (for C) the one
    Python was built with where it is here (a conda Python names its own,
    often absent), else the first of names here. Raises OSError when
    there is none. (cpp.py asks for CXX's.)"""
    import shutil
    import sysconfig
    first = (os.environ.get(var),) + ((sysconfig.get_config_var("CC"),) if var == "CC" else ())
    for c in first + tuple(names):
        words = (c or "").split()
        if words and shutil.which(words[0]):
            return words
    raise OSError("no %s compiler (%s)" % (what, ", ".join((var,) + tuple(names))))


def _cached_path(name, src, extra=b""):
    """Where a build of src lives in the cache folder: named by the hash
    of the source, of this interpreter and of extra (what else it is built
    against), so that a build of another source, Python or library is
    never loaded."""
    import hashlib
    import sysconfig
    with open(src, "rb") as fh:
        data = fh.read()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    key = hashlib.sha256(data + sys.version.encode() + suffix.encode() + extra)
    return os.path.join(_cache_dir(), "%s-%s%s" % (name, key.hexdigest()[:16], suffix))


def _temp_beside(so):
    """A temporary file in so's folder (made with it) for a compiler to
    write, renamed into place when whole."""
    import tempfile
    os.makedirs(os.path.dirname(so), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(so), suffix=".so.tmp")
    os.close(fd)
    return tmp


def _compile(cmd, tmp, so, timeout):
    """Runs the compiler's cmd, which writes tmp, then renames tmp to so.
    Raises RuntimeError with the compiler's message when it fails (tmp
    is the caller's to remove)."""
    import subprocess
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (cmd[0], p.stdout.decode("utf-8", "replace").strip()[-600:]))
    os.replace(tmp, so)


def _import_built(name, so, api):
    """The extension module name from so, when its API is api; raises
    ImportError otherwise."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.ExtensionFileLoader(name, so)
    spec = importlib.util.spec_from_file_location(name, so, loader=loader)
    m = importlib.util.module_from_spec(spec)
    loader.exec_module(m)
    if getattr(m, "API", None) != api:
        raise ImportError("%s: API %r, not %d" % (so, getattr(m, "API", None), api))
    return m


# The C module's optimisation, part of its cache key (module_path): a
# build with other flags is another file.
_CFLAGS = ("-O2",)


def _build(src, so, extra=()):
    """Compiles src into the extension so, whole or not at all (a build
    in another process meanwhile leaves one of the two), with the
    compiler's extra arguments (recorder-overhead.py --parts: -DCGT_PARTS).
    Raises OSError or RuntimeError (the compiler's message) when it
    cannot."""
    import sysconfig
    cc = _compiler()
    tmp = _temp_beside(so)
    cmd = (cc + list(_CFLAGS) + list(extra)
           + ["-shared", "-fPIC", "-I", sysconfig.get_paths()["include"], src, "-o", tmp])
    if sys.platform == "darwin":
        cmd[1:1] = ["-undefined", "dynamic_lookup"]
    try:
        try:
            _compile(cmd, tmp, so, 120)
        except RuntimeError:
            if "-DCGT_NO_FAST_FRAMES" in extra:
                raise
            # (The walk of the interpreter's own frames reads its internal
            # header, which an unusual Python may not compile with: the
            # walk of the frame objects then, the rest the same.)
            _compile(cmd[:1] + ["-DCGT_NO_FAST_FRAMES"] + cmd[1:], tmp, so, 120)
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


def module_path():
    """Where load() finds the built module: in the cache folder, named by
    the hash of _fastpath.c and of this interpreter (a build of another
    source, another Python or other flags is never loaded).
    tools/recorder-asan.sh builds a sanitized one there."""
    return _cached_path("_cgtrace_fastpath", _SRC, " ".join(_CFLAGS).encode())


def use_python(why):
    """load() answers this module from here on, and why: a tool timing the
    Python checks where the C ones could be had (recorder-overhead.py's
    copies of the recorder)."""
    _loaded["got"] = (sys.modules[__name__], why)


def _load():
    import sysconfig
    mod = sys.modules[__name__]
    if os.environ.get("CGTRACE_FAST", "1") == "0":
        return mod, "CGTRACE_FAST=0"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        # (The module reads dicts by borrowed references, safe under the
        # GIL only; loading it would turn a free-threaded program's GIL
        # back on, which changes the program.)
        return mod, "a free-threaded Python"
    try:
        so = module_path()
        if not os.path.exists(so):
            _build(_SRC, so)
        return _import_built("_cgtrace_fastpath", so, API), None
    except Exception as e:  # (no compiler, no headers, a read-only cache: the Python checks)
        return mod, "%s: %s" % (type(e).__name__, e)
