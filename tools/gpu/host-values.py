#!/usr/bin/env python3
"""host-values.py: the recorder reads a small tensor's values (a `tensor`
record's init) without allocating on the GPU (issue 33 item 2: recording
must never change the program, not even what freed device memory holds).

For tensors of each layout a program hands a compiled function (contiguous,
a column slice, a transpose, an expanded one, one with an offset), the
values cgtrace's read gives must be the tensor's own, and the caching
allocator's count of allocations made must not move while it reads.

    python3 tools/gpu/host-values.py     (exit 1 on a difference)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces", "pytorch"))

import torch  # noqa: E402

from cgtrace.liveness import host_values  # noqa: E402


def main():
    base = torch.arange(48, dtype=torch.float32, device="cuda").reshape(6, 8)
    cases = {
        "contiguous": base[1:3],
        "column slice": base[:, ::2],
        "transpose": base.t(),
        "expanded": torch.arange(4.0, device="cuda").expand(3, 4),
        "offset column": base[2:, 5],
    }
    bad = 0
    torch.cuda.synchronize()
    for name, t in cases.items():
        before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
        got = host_values(t)
        after = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
        want = [float(x) for x in t.reshape(-1).tolist()]
        ok = got == want and after == before
        bad += not ok
        print("%-14s %s: values %s, device allocations during the read %d"
              % (name, "ok  " if ok else "FAIL", "same" if got == want else "%r != %r" % (got, want), after - before))
    print("%d of %d layouts read without a device allocation and with their own values" % (len(cases) - bad, len(cases)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
