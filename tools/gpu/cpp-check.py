#!/usr/bin/env python3
"""cpp-check.py: the recorder's C++ reads (cgtrace/_cpp.cpp, built by
cgtrace.cpp against the installed torch) held to torch's own Python
reads on every layout a program hands the tree, then timed beside them.

    python3 tools/gpu/cpp-check.py [--device cuda] [--no-time]

Builds the module at once (CGTRACE_CPP=wait's way) into CGTRACE_CACHE
and prints the build's seconds; then, for each case, new_input,
data_ptr, ptrs_equal (and PTRS_ARE through the C module's KeptSet),
storage_weak_ref, weak_expired, weak_free, use_count (and FNS through
the C module's StorageRefs) and facts against
v.untyped_storage()._cdata, v.data_ptr(), torch._C's
_tensors_data_ptrs_at_indices_equal, _weak_ref(), _expired,
_free_weak_ref, _use_count() and the Python reads
(a mismatch is printed and the exit status is 1); then each, warm and
cold (8 MiB read before each), beside the bindings' reads it replaces,
in ns. Exit 2 when the module cannot be built, or there is no torch
(why printed).
"""
import argparse
import os
import statistics
import sys
import time
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces", "pytorch"))


def cases(torch, dev):
    base = torch.arange(4 * 6 * 8, dtype=torch.float32, device=dev).reshape(4, 6, 8)
    out = {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "offset view": base[1:, 2:, ::2],
        "expanded (stride 0)": torch.ones(3, 1, device=dev).expand(3, 5),
        "channels_last": torch.ones(2, 3, 4, 5, device=dev).to(memory_format=torch.channels_last),
        "half": torch.ones(5, 3, dtype=torch.float16, device=dev),
        "bfloat16": torch.ones(7, dtype=torch.bfloat16, device=dev),
        "int64 scalar": torch.tensor(7, device=dev),
        "bool": torch.zeros(3, dtype=torch.bool, device=dev),
        "empty": torch.empty(0, 4, device=dev),
        "requires_grad": torch.ones(3, 3, device=dev, requires_grad=True),
        "Parameter": torch.nn.Parameter(torch.ones(2, 2, device=dev)),
        "cpu": torch.ones(2, 3),
        "storage larger than the view": torch.ones(100, device=dev)[:10],
    }
    return out


def python_reads(torch, t):
    st = t.untyped_storage()
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.layout is torch.strided, t.get_device(),
            st._cdata, st.nbytes(), t.data_ptr())


def check(torch, reads, dev):
    bad = []
    U = torch.UntypedStorage
    eq = torch._C._tensors_data_ptrs_at_indices_equal
    cs = cases(torch, dev)
    for name, t in cs.items():
        want = python_reads(torch, t)
        got = reads.facts(t)
        if tuple(got) != want:
            bad.append("%s: facts %r, python %r" % (name, got, want))
        if reads.data_ptr(t) != t.data_ptr():
            bad.append("%s: data_ptr" % name)
        # new_input: (storage, pointer) for its own facts; None for each
        # one fact changed.
        shape, stride, off, strided, device, cd, nbytes, ptr = want
        ok = reads.new_input(t, t.dtype, t.shape, stride, device, nbytes)
        if off == 0 and strided:
            if ok != (cd, ptr):
                bad.append("%s: new_input %r, want %r" % (name, ok, (cd, ptr)))
        elif ok is not None:
            bad.append("%s: new_input took offset %d" % (name, off))
        other = torch.float64 if t.dtype is not torch.float64 else torch.float32
        for what, args in (("dtype", (other, t.shape, stride, device, nbytes)),
                           ("shape", (t.dtype, tuple(shape) + (1,), stride, device, nbytes)),
                           ("stride", (t.dtype, t.shape, tuple(s + 1 for s in stride), device, nbytes)),
                           ("device", (t.dtype, t.shape, stride, device + 7, nbytes)),
                           ("nbytes", (t.dtype, t.shape, stride, device, nbytes + 1))):
            if what == "stride" and not stride:
                continue
            if reads.new_input(t, *args) is not None:
                bad.append("%s: new_input took another %s" % (name, what))
        h = reads.storage_weak_ref(t)
        if h != cd or U._expired(h):
            bad.append("%s: storage_weak_ref %r (storage %r), expired %r" % (name, h, cd, U._expired(h)))
        if reads.weak_expired(h) is not U._expired(h):
            bad.append("%s: weak_expired %r, torch %r" % (name, reads.weak_expired(h), U._expired(h)))
        reads.weak_free(h)  # (FNS's free of the handle storage_weak_ref made, as _free_weak_ref is)
        if reads.use_count(t) != t._use_count():
            bad.append("%s: use_count %r, torch %r" % (name, reads.use_count(t), t._use_count()))
    ts = list(cs.values())
    from cgtrace import fastpath
    kept_set = getattr(fastpath.load()[0], "KeptSet", None)
    if kept_set is None:
        bad.append("no KeptSet in the C module (%s): PTRS_ARE not checked" % (fastpath.load()[1],))
    ptrs = [t.data_ptr() for t in ts]
    idx = list(range(len(ts)))
    for what, p, i in (("all", ptrs, idx), ("one moved", ptrs[:3] + [ptrs[3] + 4] + ptrs[4:], idx),
                       ("the moved one not asked", ptrs[:3] + [ptrs[3] + 4] + ptrs[4:], idx[:3] + idx[4:]),
                       ("none asked", ptrs, [])):
        if reads.ptrs_equal(ts, p, i) != eq(ts, p, i):
            bad.append("ptrs_equal %s: %r, torch %r" % (what, reads.ptrs_equal(ts, p, i), eq(ts, p, i)))
        # (the same check as the C function PTRS_ARE, which _fastpath.c's
        # KeptSet calls on the kept inputs it found by address)
        if kept_set is not None:
            ks = kept_set(tuple(weakref.ref(ts[j]) for j in i), i, [p[j] for j in i], reads.PTRS_ARE)
            if ks.same(ts, i, p, None, None, None) != eq(ts, p, i):
                bad.append("PTRS_ARE %s: %r, torch %r" % (what, ks.same(ts, i, p, None, None, None), eq(ts, p, i)))
    for what, arg in (("not a tensor", 3), ("a list", [1])):
        if reads.new_input(arg, torch.float32, (1,), (1,), 0, 4) is not None:
            bad.append("new_input took %s" % what)
    # A weak reference outlives its storage, and says so.
    t = torch.ones(16, device=dev)
    h = reads.storage_weak_ref(t)
    del t
    if not U._expired(h) or not reads.weak_expired(h):
        bad.append("storage_weak_ref: not expired after its storage died (torch %r, weak_expired %r)"
                   % (U._expired(h), reads.weak_expired(h)))
    U._free_weak_ref(h)
    # The FNS capsule through the C module's StorageRefs (what a lean
    # fresh call makes of its new input): the handle torch's, alive while
    # the storage is, expired after; and the use count with a second
    # reference in C++ (a view's base holds none: an autograd graph's
    # saved tensor does).
    refs = getattr(fastpath.load()[0], "StorageRefs", None)
    if refs is None:
        bad.append("no StorageRefs in the C module: FNS not checked")
    else:
        t = torch.ones(16, device=dev)
        r = refs(U._free_weak_ref, U._expired, reads.FNS)(t)
        if r.cdata != t.untyped_storage()._cdata or r.expired():
            bad.append("FNS StorageRef: cdata %r (storage %r), expired %r" % (r.cdata, t.untyped_storage()._cdata,
                                                                            r.expired()))
        del t
        if not r.expired():
            bad.append("FNS StorageRef: not expired after its storage died")
        del r
    w = torch.ones(3, device=dev, requires_grad=True)
    y = w * w  # (mul saves w: the graph holds its TensorImpl)
    for what, x in (("saved by autograd", w), ("an op's output", y)):
        if reads.use_count(x) != x._use_count():
            bad.append("use_count of %s: %r, torch %r" % (what, reads.use_count(x), x._use_count()))
    try:
        reads.use_count(3)
        bad.append("use_count took an int")
    except TypeError:
        pass
    return bad, len(cs)


def timings(torch, reads, dev, iters, cold_iters, evict_mb):
    t = torch.randn(32, 64, device=dev)
    strided = torch.strided
    dt, shape, stride, device, nbytes = t.dtype, t.shape, t.stride(), t.get_device(), t.untyped_storage().nbytes()
    ins = [torch.randn(4, device=dev) for _ in range(7)]
    ptrs = [x.data_ptr() for x in ins]
    idx = list(range(7))
    eq = torch._C._tensors_data_ptrs_at_indices_equal
    U = torch.UntypedStorage
    s = t.untyped_storage()
    from cgtrace import fastpath
    refs = fastpath.load()[0].StorageRefs
    fns_ref = refs(U._free_weak_ref, U._expired, reads.FNS)
    torch_ref = refs(U._free_weak_ref, U._expired, reads.storage_weak_ref)

    def bindings_new_input():
        # (fastpath.fresh_input's reads without reads: the checks, then the
        # storage, its handle and size, the data pointer)
        if (t.layout is not strided or t.dtype is not dt or t.shape != shape or t.stride() != stride
                or t.storage_offset() != 0 or t.get_device() != device):
            return None
        st = t.untyped_storage()
        if st.nbytes() != nbytes:
            return None
        return st._cdata, t.data_ptr()

    ops = [
        ("a new input's reads: bindings", bindings_new_input),
        ("a new input's reads: reads.new_input", lambda: reads.new_input(t, dt, shape, stride, device, nbytes)),
        ("7 pointers: torch._C._tensors_data_ptrs_at_indices_equal", lambda: eq(ins, ptrs, idx)),
        ("7 pointers: reads.ptrs_equal", lambda: reads.ptrs_equal(ins, ptrs, idx)),
        ("data pointer: t.data_ptr()", lambda: t.data_ptr()),
        ("data pointer: reads.data_ptr", lambda: reads.data_ptr(t)),
        ("storage weak ref: s._weak_ref() + free", lambda: U._free_weak_ref(t.untyped_storage()._weak_ref())),
        ("storage weak ref: reads.storage_weak_ref + free", lambda: U._free_weak_ref(reads.storage_weak_ref(t))),
        ("storage weak ref: StorageRefs with FNS, made, asked, freed", lambda: fns_ref(t).expired()),
        ("storage weak ref: StorageRefs with torch's, made, asked, freed", lambda: torch_ref(t).expired()),
        ("use count: t._use_count()", lambda: t._use_count()),
        ("use count: reads.use_count", lambda: reads.use_count(t)),
        ("nothing (the loop's own cost)", lambda: None),
    ]
    view = memoryview(bytearray(evict_mb << 20))[::64]

    def timed(fn, n, cold):
        if not cold:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            return (time.perf_counter_ns() - t0) / n
        ns = 0
        for _ in range(n):
            bytes(view)
            t0 = time.perf_counter_ns()
            fn()
            ns += time.perf_counter_ns() - t0
        return ns / n

    print("\nns an operation, medians of 3 rounds (warm: %d in a loop; cold: %d, %d MiB read before each)"
          % (iters, cold_iters, evict_mb))
    print("| operation | warm | cold |")
    print("| --- | --- | --- |")
    for name, fn in ops:
        warm = statistics.median(timed(fn, iters, False) for _ in range(3))
        cold = statistics.median(timed(fn, cold_iters, True) for _ in range(3))
        print("| %s | %.0f | %.0f |" % (name, warm, cold))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--cold-iters", type=int, default=500)
    ap.add_argument("--evict-mb", type=int, default=8)
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("cpp-check: no torch here (%s): the module is built against the installed torch" % e)
        return 2
    from cgtrace import cpp as R
    os.environ["CGTRACE_CPP"] = "wait"
    so = R.module_path(torch)
    built = os.path.exists(so)
    t0 = time.perf_counter()
    mod, why = R.load(torch)
    secs = time.perf_counter() - t0
    print("torch %s, Python %s; %s" % (torch.__version__, sys.version.split()[0], so))
    if mod is None:
        print("not built: %s" % why)
        return 2
    print("- %s in %.1f s" % ("loaded from the cache" if built else "built and loaded", secs))
    bad, n = check(torch, mod, a.device)
    print("- %d layouts and the pointer, weak-reference and refusal cases against torch's reads: %s"
          % (n, "all equal" if not bad else "%d MISMATCHES" % len(bad)))
    for b in bad:
        print("  - " + b)
    if not a.no_time:
        timings(torch, mod, a.device, a.iters, a.cold_iters, a.evict_mb)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
