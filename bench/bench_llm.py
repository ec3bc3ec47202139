"""Benchmark: the `llm` matcher judging 1,000 distinct pairs against an OpenAI-compatible server
on 127.0.0.1 that adds 200 ms of latency to every call (a slow real API).

    .venv/bin/python bench/bench_llm.py [--pairs 1000] [--latency 0.2] [--concurrency 32]

Prints the wall time, the throughput and the concurrency used; exits 1 when the run misses the
15-second budget (the acceptance bound of issue #6), any pair failed, or a pair was judged twice.
The server is tests/openai_server.py (the test suite's), run in a child process and driven
through the real openai SDK.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from runner.matchers.base import PairError
from runner.matchers.llm import LlmMatcher

REPO = Path(__file__).resolve().parents[1]
BUDGET_S = 15.0


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """tests/openai_server.py in a child process (it must not share our interpreter lock, as
    a real API would not); returns the process and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.openai_server", "--latency",
                             str(latency), "--p-yes", "0.73"], cwd=REPO, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"the test server did not start (printed {url!r})")
    return proc, url


def server_calls(url: str, path: str) -> int:
    with urllib.request.urlopen(url + "/_stats", timeout=10) as resp:
        return int(json.load(resp)["counts"].get(path, 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds added per call")
    parser.add_argument("--concurrency", type=int, default=LlmMatcher.concurrency,
                        help="the matcher's concurrency (default: the matcher's default)")
    args = parser.parse_args()

    pairs = [(f"Reference passage number {i}: employees must do thing {i}.",
              f"Cited passage number {i}: staff have to do thing {i}.") for i in range(args.pairs)]
    proc, url = start_server(args.latency)
    try:
        matcher = LlmMatcher(base_url=url + "/v1", openai_api_key="sk-bench",
                             concurrency=args.concurrency, timeout=30.0)
        start, cpu = time.perf_counter(), time.process_time()
        sims = matcher.similarities(pairs)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        calls = server_calls(url, "/v1/chat/completions")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)

    errors = sum(isinstance(s, PairError) for s in sims)
    floor = args.pairs * args.latency / args.concurrency
    print(f"llm matcher: {args.pairs} pairs, {args.latency * 1000:.0f} ms added latency, "
          f"concurrency {args.concurrency}: {elapsed:.2f} s "
          f"({args.pairs / elapsed:.0f} pairs/s; latency floor {floor:.2f} s), "
          f"{calls} calls, {errors} errors; client CPU {cpu:.2f} s")
    ok = elapsed < BUDGET_S and errors == 0 and calls == args.pairs
    if not ok:
        print(f"FAILED: budget {BUDGET_S:.0f} s, every pair judged exactly once without error")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
