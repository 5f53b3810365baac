#!/usr/bin/env python3
"""Reference per-turn tool tracker, for comparing toolguard's cost per call.

It is the three-tier check that toolguard's design describes for a chat
service's tool tracker, written plainly in CPython (standard library only):

  1. per-tool execution limit per turn;
  2. exact duplicate: md5 of the JSON arguments with keys sorted;
  3. similar query, for search tools only: the query (first string among
     query, search_query, q, text, question, prompt) lowercased, stripped of
     non-word characters, whitespace collapsed, compared with
     difflib.SequenceMatcher(...).ratio() >= 0.75 against every earlier query
     of the same tool in the turn.

Usage: reference.py [-repeat N] FILE.jsonl...
Replays every call of the trace files (one turn per episode) N times and
prints one line: "reference ns/call=<float> calls=<int> skipped=<int>".
"""

import difflib
import hashlib
import json
import re
import sys
import time

QUERY_KEYS = ("query", "search_query", "q", "text", "question", "prompt")
SEARCH_HINTS = ("search", "query", "lookup", "retrieve", "grep")
LIMITS = {"composio_execute": 2, "read_file": 3, "write_file": 2, "list_directory": 2}
DEFAULT_LIMIT = 30
_nonword = re.compile(r"[^\w\s]")
_space = re.compile(r"\s+")


def normalize(q):
    return _space.sub(" ", _nonword.sub("", q.lower())).strip()


class TurnTracker:
    def __init__(self):
        self.reset()

    def reset(self):
        self.counts = {}
        self.hashes = set()
        self.queries = {}

    def should_skip(self, tool, args):
        n = self.counts.get(tool, 0)
        if n >= LIMITS.get(tool, DEFAULT_LIMIT):
            return "limit"
        key = tool + ":" + hashlib.md5(json.dumps(args, sort_keys=True).encode()).hexdigest()
        if key in self.hashes:
            return "duplicate"
        query = None
        if any(h in tool.lower() for h in SEARCH_HINTS) and isinstance(args, dict):
            for k in QUERY_KEYS:
                if isinstance(args.get(k), str):
                    query = normalize(args[k])
                    break
        if query:
            for earlier in self.queries.get(tool, ()):
                if difflib.SequenceMatcher(None, query, earlier).ratio() >= 0.75:
                    return "similar"
        self.counts[tool] = n + 1
        self.hashes.add(key)
        if query:
            self.queries.setdefault(tool, []).append(query)
        return None


def main(argv):
    repeat = 20
    files = []
    it = iter(argv)
    for a in it:
        if a == "-repeat":
            repeat = int(next(it))
        else:
            files.append(a)
    episodes = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    ep = json.loads(line)
                    episodes.append([(c["tool"], c["args"]) for c in ep["calls"]])
    calls = sum(len(e) for e in episodes)
    tracker = TurnTracker()
    skipped = 0
    start = time.perf_counter_ns()
    for _ in range(repeat):
        for ep in episodes:
            tracker.reset()
            for tool, args in ep:
                if tracker.should_skip(tool, args):
                    skipped += 1
    elapsed = time.perf_counter_ns() - start
    print(f"reference ns/call={elapsed / (calls * repeat):.1f} calls={calls} skipped={skipped // repeat}")


if __name__ == "__main__":
    main(sys.argv[1:])
