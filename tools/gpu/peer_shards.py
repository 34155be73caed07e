#!/usr/bin/env python3
"""peer_shards.py: one round of the peer suite split into shards that run
alike unrecorded and recorded (gpu.sh's peer-compare, paired).

    python3 tools/gpu/peer_shards.py --ids collected.txt --shards 8 --round 3 --out DIR

reads the test ids (one a line, as `pytest --collect-only -q` prints
them), orders them by a shuffle of seed --round, and writes DIR/shard-K.txt
(K from 1), the ids of each shard in the order its process runs them:
contiguous slices of the shuffled list, as even as they can be. The same
--round gives the same shards, so a round's unrecorded and recorded
processes run each test after the same tests; another round, another
order (a test that fails only after some other is seen as flaky, not as
recording's).
"""
import argparse
import os
import random
import sys


def shards(ids, n, round_no):
    """ids shuffled by round_no, in n contiguous slices (none empty unless
    there are fewer ids than slices)."""
    order = list(ids)
    random.Random(round_no).shuffle(order)
    n = max(1, min(n, len(order))) if order else 1
    size, extra = divmod(len(order), n)
    out, at = [], 0
    for k in range(n):
        step = size + (1 if k < extra else 0)
        out.append(order[at:at + step])
        at += step
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", required=True, help="the collected test ids, one a line")
    ap.add_argument("--shards", type=int, required=True)
    ap.add_argument("--round", type=int, required=True, help="the round's number: the shuffle's seed")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        with open(a.ids, encoding="utf-8") as fh:
            ids = [line.strip() for line in fh if "::" in line]
    except OSError as e:
        print("peer_shards: %s" % e, file=sys.stderr)
        return 2
    if not ids:
        print("peer_shards: no test ids in %s" % a.ids, file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    parts = shards(ids, a.shards, a.round)
    for k, part in enumerate(parts, 1):
        with open(os.path.join(a.out, "shard-%d.txt" % k), "w", encoding="utf-8") as fh:
            fh.write("".join(i + "\n" for i in part))
    print("%d tests in %d shards (round %d): %s" % (len(ids), len(parts), a.round, " ".join(str(len(p)) for p in parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
