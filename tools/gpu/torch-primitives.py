#!/usr/bin/env python3
"""torch-primitives.py: what each torch operation the recorder's lean
paths make at a call costs on this host, warm (a tight loop) and cold (a
buffer of --evict-mb MiB read between two operations, as a real
program's call runs torch's and the driver's code between two of the
recorder's), in ns an operation, medians of --rounds.

    python3 tools/gpu/torch-primitives.py [--device cuda] [--evict-mb 8]

Needs torch; on a machine without a GPU, --device cpu. The figures say
which of the recorder's per-call steps are worth taking out of the call
(issue 33 item 5): a Python-level torch helper (StorageWeakRef's
__init__, __del__ and expired) against the C methods beneath it, a weak
reference whose callback is a Python function against one without.
"""
import argparse
import statistics
import threading
import time
import weakref


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--cold-iters", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--evict-mb", type=int, default=8)
    a = ap.parse_args()
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef

    t = torch.randn(32, 64, device=a.device)
    s = t.untyped_storage()
    U = torch.UntypedStorage
    tls = threading.local()
    tls.x = 0
    died = []

    def cb(wr):
        died.append(wr)

    sw = StorageWeakRef(s)
    cd = s._weak_ref()
    inputs = [torch.randn(4, device=a.device) for _ in range(7)]
    ptrs = [x.data_ptr() for x in inputs]
    eq = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)

    def free_new():
        U._free_weak_ref(s._weak_ref())

    ops = [
        ("t.untyped_storage()", lambda: t.untyped_storage()),
        ("t.data_ptr()", lambda: t.data_ptr()),
        ("t.untyped_storage()._cdata", lambda: t.untyped_storage()._cdata),
        ("s.nbytes()", lambda: s.nbytes()),
        ("t.shape", lambda: t.shape),
        ("t.stride()", lambda: t.stride()),
        ("t.dtype", lambda: t.dtype),
        ("t.device", lambda: t.device),
        ("type(t)", lambda: type(t)),
        ("StorageWeakRef(s), dropped", lambda: StorageWeakRef(s)),
        ("StorageWeakRef.expired()", lambda: sw.expired()),
        ("s._weak_ref() + UntypedStorage._free_weak_ref", free_new),
        ("UntypedStorage._expired(cd)", lambda: U._expired(cd)),
        ("weakref.ref(t, python cb), dropped", lambda: weakref.ref(t, cb)),
        ("weakref.ref(t), dropped", lambda: weakref.ref(t)),
        ("threading.local attribute set", lambda: setattr(tls, "x", 1)),
        ("torch.empty(32, 64) made and freed", lambda: torch.empty(32, 64, device=a.device)),
        ("torch.empty(32, 64) + weakref python cb, freed", lambda: weakref.ref(torch.empty(32, 64, device=a.device), cb)),
    ]
    idx = list(range(7))
    if eq is not None:
        ops.append(("_tensors_data_ptrs_at_indices_equal (7)", lambda: eq(inputs, ptrs, idx)))
    dp = torch.Tensor.data_ptr

    def seven():
        for i in idx:
            if dp(inputs[i]) != ptrs[i]:
                return False
        return True

    ops.append(("7 x Tensor.data_ptr compared, in a loop", seven))

    strided = torch.strided

    def new_input_reads():
        # The reads a lean fresh call makes of its new input (fastpath's
        # fresh_input and fresh_queue), in one go: what exactness costs
        # a call before any of the recorder's own work.
        st = t.untyped_storage()
        return (t.__class__, t.layout is strided, t.dtype, t.shape, t.stride(), t.storage_offset(),
                t.get_device(), st._cdata, st.nbytes(), t.data_ptr())

    ops.append(("a new input's reads (class .. data_ptr, 10 of them)", new_input_reads))
    ops.append(("nothing (the loop's own cost)", lambda: None))

    buf = bytearray(a.evict_mb << 20)
    view = memoryview(buf)[::64]

    def timed(fn, n, cold):
        ns = 0
        if not cold:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            return (time.perf_counter_ns() - t0) / n
        for _ in range(n):
            bytes(view)  # (a cache line at a time: what runs between two calls)
            t0 = time.perf_counter_ns()
            fn()
            ns += time.perf_counter_ns() - t0
        return ns / n

    print("torch %s, device %s; ns an operation, medians of %d rounds (warm: %d in a loop; cold: %d, %d MiB read before each)"
          % (torch.__version__, a.device, a.rounds, a.iters, a.cold_iters, a.evict_mb))
    print("| operation | warm | cold |")
    print("| --- | --- | --- |")
    for name, fn in ops:
        warm = statistics.median(timed(fn, a.iters, False) for _ in range(a.rounds))
        cold = statistics.median(timed(fn, a.cold_iters, True) for _ in range(a.rounds))
        print("| %s | %.0f | %.0f |" % (name, warm, cold))
        died.clear()


if __name__ == "__main__":
    main()
