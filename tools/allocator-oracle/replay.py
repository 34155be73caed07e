#!/usr/bin/env python3
"""allocator-oracle replay: runs allocation sequences through PyTorch's real
CUDA caching allocator and compares the resulting layouts with what cgtviz's
engine/alloc predicts.

    python3 replay.py sequences.json --expected expected.json \
        [--predictor CMD] [--out actual.json]

sequences.json (written by `go run ./tools/allocator-oracle`) is a list of
{"name", "pool": "default"|"private", "ops": [["a", id, bytes, stream],
["f", id], ...]}. Each sequence runs in a fresh state (empty_cache before
and after): allocations are torch.empty(bytes, dtype=torch.uint8) on
stream 0 (the current stream) or stream 1 (one side torch.cuda.Stream);
"private" sequences run inside torch.cuda.use_mem_pool(MemPool()). A
tensor is held by the sequence's table alone, so that ["f", id] frees it
at once (a Python variable still naming the last tensor would defer its
free past the next allocation). The result of a sequence is the segments
of its pool in torch.cuda.memory_snapshot(), each as {"segment_size",
"blocks": [[offset, size, allocated], ...]}, ordered by the first
allocation of the sequence that landed in them (the one that made the
segment), so that offsets never depend on addresses.

Best fit breaks ties between equal free blocks by address, also between
segments, and cudaMalloc's addresses are not increasing, so a layout can
depend on where the segments landed. Each result therefore also records
"segment_addresses" (the segments' addresses, same order). With
--predictor (a built `allocator-oracle`, e.g. .bin/allocator-oracle-predict,
or "go run ./tools/allocator-oracle"), engine/alloc predicts every
sequence again with those addresses (`-predict`) and that is the
comparison; expected.json (increasing addresses) is then reported beside
it.

Output: one line per sequence, "sequence N (name): match" or a diff, then
"M/N sequences match". Exit status 0 when all match.
"""
import argparse
import gc
import json
import os
import shlex
import subprocess
import sys
import tempfile
import traceback

# The oracle must see PyTorch's defaults (no expandable segments, no
# max_split_size): set before torch is imported.
_CONF = os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
os.environ.pop("PYTORCH_ALLOC_CONF", None)

import torch  # noqa: E402

DEV = 0


def pool_segments(pool_id):
    """Segments of one pool on DEV, from memory_snapshot()."""
    out = []
    for seg in torch.cuda.memory_snapshot():
        if seg.get("device", DEV) != DEV:
            continue
        if tuple(seg.get("segment_pool_id", (0, 0))) != tuple(pool_id):
            continue
        out.append(seg)
    return out


def layout(segs, order):
    """Segments as offsets, sorted by the first allocation in each, and
    their addresses in that order."""

    def first(seg):
        lo, hi = seg["address"], seg["address"] + seg["total_size"]
        for i, p in enumerate(order):
            if lo <= p < hi:
                return i
        return len(order)

    result, addresses = [], []
    for seg in sorted(segs, key=first):
        blocks, off = [], 0
        for b in seg["blocks"]:
            blocks.append([off, b["size"], b["state"] == "active_allocated"])
            off += b["size"]
        result.append({"segment_size": seg["total_size"], "blocks": blocks})
        addresses.append(seg["address"])
    return result, addresses


def run_ops(ops, streams, tensors, order):
    # No local variable may name a tensor: `t = torch.empty(...)` kept the
    # last tensor alive until the next allocation had been made, so its
    # ["f", id] freed it one allocation late (run 1's 21 false mismatches).
    for op in ops:
        if op[0] == "a":
            _, ident, nbytes, stream = op
            with torch.cuda.stream(streams[stream]):
                tensors[ident] = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            order.append(tensors[ident].data_ptr())
        elif op[0] == "f":
            del tensors[op[1]]
        else:
            raise ValueError(f"unknown op {op!r}")


def replay(seq, streams):
    """Runs one sequence; returns its layout, segment addresses and
    warnings."""
    warnings = []
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    tensors, order = {}, []
    if seq["pool"] == "default":
        left = pool_segments((0, 0))
        if left:
            warnings.append(f"{len(left)} default-pool segments existed before the sequence")
        run_ops(seq["ops"], streams, tensors, order)
        torch.cuda.synchronize()
        result, addresses = layout(pool_segments((0, 0)), order)
    elif seq["pool"] == "private":
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            run_ops(seq["ops"], streams, tensors, order)
        torch.cuda.synchronize()
        result, addresses = layout(pool_segments(pool.id), order)
        tensors.clear()
        del pool
    else:
        raise ValueError(f"unknown pool {seq['pool']!r}")
    tensors.clear()
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return result, addresses, warnings


def diff(want, got):
    """A short description of how two layouts differ."""
    lines = []
    if len(want) != len(got):
        lines.append(f"  {len(got)} segments, expected {len(want)}")
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w == g:
            continue
        lines.append(f"  segment {i}:")
        lines.append(f"    expected {json.dumps(w)}")
        lines.append(f"    pytorch  {json.dumps(g)}")
    return "\n".join(lines)


def predict(cmd, sequences_path, actual):
    """engine/alloc's layouts with PyTorch's segment addresses, by name."""
    addrs = [{"name": a["name"], "segment_addresses": a["segment_addresses"]}
             for a in actual if "segment_addresses" in a]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(addrs, f)
        path = f.name
    try:
        out = subprocess.run(shlex.split(cmd) + ["-predict", path, "-sequences", sequences_path],
                             check=True, capture_output=True, text=True)
    finally:
        os.unlink(path)
    return {r["name"]: r["segments"] for r in json.loads(out.stdout)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sequences")
    ap.add_argument("--expected", help="engine/alloc's predictions (expected.json)")
    ap.add_argument("--predictor", help="command of a built allocator-oracle: predict again with "
                    "PyTorch's segment addresses and compare with that")
    ap.add_argument("--out", help="write PyTorch's layouts here")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("error: no CUDA device", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(DEV)}")
    if _CONF:
        print(f"note: ignored PYTORCH_CUDA_ALLOC_CONF={_CONF!r}")
    try:
        settings = torch.cuda.memory._snapshot().get("allocator_settings")
        if settings:
            print(f"allocator settings: expandable_segments={settings.get('expandable_segments')} "
                  f"max_split_size={settings.get('max_split_size')}")
    except Exception as e:  # older or newer builds: informational only
        print(f"note: no allocator settings ({e})")

    with open(args.sequences) as f:
        seqs = json.load(f)
    expected = None
    if args.expected:
        with open(args.expected) as f:
            expected = {r["name"]: r["segments"] for r in json.load(f)}

    torch.cuda.set_device(DEV)
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    actual = []
    for i, seq in enumerate(seqs):
        name = seq.get("name", str(i))
        try:
            got, addresses, warnings = replay(seq, streams)
        except Exception:
            print(f"sequence {i} ({name}): error")
            traceback.print_exc(file=sys.stdout)
            actual.append({"name": name, "error": traceback.format_exc()})
            try:
                gc.collect()
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception:
                pass
            continue
        actual.append({"name": name, "segments": got, "segment_addresses": addresses})
        for w in warnings:
            print(f"sequence {i} ({name}): warning: {w}")

    if args.out:
        with open(args.out, "w") as f:
            json.dump(actual, f, indent=1)

    predicted = None
    if args.predictor:
        try:
            predicted = predict(args.predictor, args.sequences, actual)
        except Exception as e:
            print(f"error: predictor {args.predictor!r}: {e}")
            if isinstance(e, subprocess.CalledProcessError):
                print(e.stderr)
    want = predicted if predicted is not None else expected
    if want is None:
        for i, a in enumerate(actual):
            if "segments" in a:
                print(f"sequence {i} ({a['name']}): {len(a['segments'])} segments")
        return 0 if all("segments" in a for a in actual) else 1

    matches = static = 0
    for i, (seq, a) in enumerate(zip(seqs, actual)):
        name = a["name"]
        if "segments" not in a:
            continue
        got = a["segments"]
        if expected is not None and expected.get(name) == got:
            static += 1
        if name not in want:
            print(f"sequence {i} ({name}): no expected layout")
        elif want[name] == got:
            matches += 1
            note = ""
            if predicted is not None and expected is not None and expected.get(name) != got:
                note = " (expected.json differs: a best-fit tie broken by segment address)"
            print(f"sequence {i} ({name}): match{note}")
        else:
            print(f"sequence {i} ({name}): MISMATCH ({seq['pool']} pool)")
            print(diff(want[name], got))

    if predicted is not None:
        print(f"{matches}/{len(seqs)} sequences match (engine/alloc given PyTorch's segment addresses)")
        if expected is not None:
            print(f"{static}/{len(seqs)} sequences match expected.json (increasing segment addresses)")
    else:
        print(f"{matches}/{len(seqs)} sequences match")
    return 0 if matches == len(seqs) else 1


if __name__ == "__main__":
    sys.exit(main())
