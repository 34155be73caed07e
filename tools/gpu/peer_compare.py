#!/usr/bin/env python3
"""peer_compare.py: does recording change PyTorch's own tree suite?

Reads the JUnit XML files that pytest wrote (--junitxml) for rounds of the
suite run unrecorded and recorded in one GPU call (gpu.sh's peer-compare
suite: PEER_ROUNDS rounds of each, alternating), and says test by test
whether recording changed the outcome (issue 33 item 2):

  changed   every unrecorded round agrees, every recorded round agrees, and
            the two differ: recording changes the program;
  flaky     the rounds of one mode disagree among themselves: the test is
            flaky, whatever recording does;
  same      otherwise.

    python3 tools/gpu/peer_compare.py --unrecorded u1.xml u2.xml --recorded r1.xml r2.xml

With --paired, round i of each mode ran the same tests in the same order
in each process under the same hash seed (gpu.sh's peer-compare shards a
round so), so the pair differs by recording alone; a test's order and
seed change from round to round:

  changed   in some round the recorded outcome differs from the
            unrecorded one: recording changes the program;
  flaky     every pair agrees, but the rounds do not: the test depends on
            what ran before it or on the seed, whatever recording does;
  same      otherwise.

Each FILE may be several files joined by commas (a round's shards).

A pair that differs once may be the machine's doing (a compiler that
could not start while sixteen processes compiled). gpu.sh runs each such
test again in both modes, after the same tests of its shard under the
same seed, and hands the reruns in with --again-unrecorded and
--again-recorded (one item a round, comma-joined files, or "none"): a
test is then changed only when its rerun pair differs the same way; one
whose rerun gives other outcomes under the same order and seed is flaky.
--list-changed prints the ids of the tests whose pair differs (before
any rerun), one a line, for gpu.sh to run again.

Exit status 1 when a test changed, else 0 (flaky tests are listed, not
failed: recording cannot be blamed for them). Needs nothing but Python.
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def outcomes(path, why=None):
    """Test id -> outcome ("passed", "failed", "error", "skipped") of one
    JUnit XML file, or of several joined by commas (a round's shards).
    why, a dict, gets each failed or errored test's reason: the first
    line of its message that says something (the exception), cut short."""
    out = {}
    for one in path.split(","):
        out.update(_outcomes(one, why))
    return out


def _outcomes(path, why):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = "%s::%s" % (case.get("classname", ""), case.get("name", ""))
        kind = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed"}.get(child.tag, child.tag)
                if why is not None and kind != "skipped":
                    why[tid] = reason(child.get("message") or child.text or "")
                break
        out[tid] = kind
    return out


def reason(message):
    """A failure's message in one line: its last line naming an exception
    (pytest's message ends with the one raised), else its first line."""
    lines = [l.strip() for l in message.splitlines() if l.strip()]
    named = [l for l in lines if ("Error" in l or "Exception" in l) and ":" in l]
    text = (named[0] if named else lines[0]) if lines else ""
    return text[:160]


def compare(unrecorded, recorded, paired=False, again=None):
    """Per test: (verdict, unrecorded outcomes, recorded outcomes), for the
    rounds' outcome maps (paired: round i of each mode ran alike, the
    module's doc says how that changes the verdicts; again: for each
    round, (unrecorded, recorded) outcome maps of its reruns, or None). A
    test missing from a round counts as "missing" there (a crash of the
    worker that ran it)."""
    ids = set()
    for m in unrecorded + recorded:
        ids.update(m)
    rows = {}
    for tid in sorted(ids):
        u = [m.get(tid, "missing") for m in unrecorded]
        r = [m.get(tid, "missing") for m in recorded]
        if paired:
            differs = [i for i, (a, b) in enumerate(zip(u, r)) if a != b]
            # A pair that differs counts against recording only where its
            # rerun (same order, same seed) differs the same way, or where
            # it was not run again.
            held = [i for i in differs
                    if not (again and again[i] and tid in again[i][0] and tid in again[i][1])
                    or (again[i][0][tid], again[i][1][tid]) == (u[i], r[i])]
            if held:
                verdict = "changed"
            elif differs or len(set(u)) > 1:
                verdict = "flaky"
            else:
                verdict = "same"
        elif len(set(u)) > 1 or len(set(r)) > 1:
            verdict = "flaky"
        elif u and r and u[0] != r[0]:
            verdict = "changed"
        else:
            verdict = "same"
        rows[tid] = (verdict, u, r)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unrecorded", nargs="+", required=True, help="JUnit XML of each unrecorded round")
    ap.add_argument("--recorded", nargs="+", required=True, help="JUnit XML of each recorded round")
    ap.add_argument("--paired", action="store_true",
                    help="round i of each mode ran the same tests in the same order and seed")
    ap.add_argument("--again-unrecorded", nargs="+", default=None,
                    help="paired: each round's reruns unrecorded (comma-joined files, or none)")
    ap.add_argument("--again-recorded", nargs="+", default=None,
                    help="paired: each round's reruns recorded (comma-joined files, or none)")
    ap.add_argument("--list-changed", action="store_true",
                    help="paired: print only the ids of the tests whose pair differs in some round")
    a = ap.parse_args(argv)
    if a.paired and len(a.unrecorded) != len(a.recorded):
        print("peer_compare: --paired needs as many unrecorded rounds as recorded ones", file=sys.stderr)
        return 2
    if (a.again_unrecorded is None) != (a.again_recorded is None) or (
            a.again_unrecorded is not None and (not a.paired or len(a.again_unrecorded) != len(a.unrecorded)
                                                or len(a.again_recorded) != len(a.recorded))):
        print("peer_compare: --again-unrecorded and --again-recorded go together, paired, one item a round",
              file=sys.stderr)
        return 2
    whys_u = [{} for _ in a.unrecorded]
    whys_r = [{} for _ in a.recorded]
    try:
        unrec = [outcomes(p, w) for p, w in zip(a.unrecorded, whys_u)]
        rec = [outcomes(p, w) for p, w in zip(a.recorded, whys_r)]
        again = None
        if a.again_unrecorded is not None:
            again = [None if (x == "none" and y == "none") else
                     (outcomes(x) if x != "none" else {}, outcomes(y) if y != "none" else {})
                     for x, y in zip(a.again_unrecorded, a.again_recorded)]
        rows = compare(unrec, rec, a.paired, again)
    except (OSError, ET.ParseError) as e:
        print("peer_compare: %s" % e, file=sys.stderr)
        return 2
    if a.list_changed:
        for tid, (verdict, u, r) in rows.items():
            if any(x != y for x, y in zip(u, r)):
                print(tid)
        return 0
    counts = {"same": 0, "changed": 0, "flaky": 0}
    for tid, (verdict, u, r) in rows.items():
        counts[verdict] += 1
        if verdict != "same":
            print("%-7s %s: unrecorded %s, recorded %s" % (verdict, tid, "/".join(u), "/".join(r)))
            # Why each round that did not pass failed: a failure of the
            # machine (a compiler that could not start) is not recording's.
            for mode, whys in (("unrecorded", whys_u), ("recorded", whys_r)):
                for i, w in enumerate(whys, 1):
                    if tid in w:
                        print("        %s round %d: %s" % (mode, i, w[tid]))
            for i, pair in enumerate(again or (), 1):
                if pair and tid in pair[0] and tid in pair[1]:
                    print("        round %d again (same order and seed): unrecorded %s, recorded %s"
                          % (i, pair[0][tid], pair[1][tid]))
    print("%d tests in %d unrecorded and %d recorded rounds%s: %d same, %d changed by recording, %d flaky"
          % (len(rows), len(a.unrecorded), len(a.recorded), " (paired)" if a.paired else "", counts["same"],
             counts["changed"], counts["flaky"]))
    return 1 if counts["changed"] else 0


if __name__ == "__main__":
    sys.exit(main())
