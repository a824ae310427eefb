"""A bounded load test of a running ragdb server: many searches at once, during an index run.

It checks the claim the server makes (searches keep being answered from the previous index
while a re-index runs in its own transaction) and measures the latency users would see. Plain
threads and urllib, so it runs against any `ragdb serve` without extra dependencies:

    python -m benchmarks.loadtest http://127.0.0.1:8001 --n 200 --concurrency 8
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

from benchmarks.common import percentile

DEFAULT_QUESTIONS = (
    "How do I load a LoRA adapter at run time?",
    "How do I start an OpenAI compatible server?",
    "What does trust_remote_code do?",
    "Which sampling parameters are supported?",
    "How is the KV cache allocated?",
    "How do I run offline batched inference?",
    "What is chunked prefill?",
    "How do I enable tensor parallelism?",
    "Where is the scheduler implemented?",
    "How do I quantize a model?",
    "What does the decoder layer forward pass do?",
    "How are prompts tokenized?",
)


def load_test(
    base_url: str,
    n: int = 200,
    concurrency: int = 8,
    during_index: bool = True,
    *,
    k: int = 5,
    mode: str = "hybrid",
    questions: Sequence[str] = DEFAULT_QUESTIONS,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """Fire `n` searches, `concurrency` at a time; with `during_index`, start a re-index first.

    Returns p50_ms, p95_ms and errors (any search that did not come back 200 with JSON), plus
    max_ms, seconds, requests_per_s, a few error samples and what the index run answered.
    """
    if n < 1 or concurrency < 1:
        raise ValueError("n and concurrency must be at least 1")
    base = base_url.rstrip("/")
    index_report: dict[str, Any] = {}

    def search(i: int) -> tuple[float, str | None]:
        query = urlencode({"q": questions[i % len(questions)], "k": k, "mode": mode})
        started = time.perf_counter()
        try:
            with urlopen(f"{base}/-/ragdb/search?{query}", timeout=timeout_s) as response:
                body = response.read()
            json.loads(body)
            return (time.perf_counter() - started) * 1000, None
        except HTTPError as exc:
            detail = exc.read()[:200].decode("utf-8", "replace")
            return (time.perf_counter() - started) * 1000, f"HTTP {exc.code}: {detail}"
        except (URLError, OSError, ValueError) as exc:
            return (time.perf_counter() - started) * 1000, f"{type(exc).__name__}: {exc}"

    def reindex() -> None:
        started = time.perf_counter()
        request = Request(f"{base}/-/ragdb/index", data=b"{}", method="POST",
                          headers={"Content-Type": "application/json"})
        try:
            with urlopen(request, timeout=max(timeout_s, 600.0)) as response:
                index_report["status"] = response.status
                index_report["result"] = json.loads(response.read())
        except HTTPError as exc:
            index_report["status"] = exc.code
            index_report["result"] = exc.read()[:500].decode("utf-8", "replace")
        except (URLError, OSError, ValueError) as exc:
            index_report["status"] = None
            index_report["result"] = f"{type(exc).__name__}: {exc}"
        index_report["seconds"] = round(time.perf_counter() - started, 3)

    started = time.perf_counter()
    indexer = threading.Thread(target=reindex, daemon=True) if during_index else None
    if indexer is not None:
        indexer.start()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(search, range(n)))
    if indexer is not None:
        indexer.join()
    elapsed = time.perf_counter() - started
    latencies = sorted(ms for ms, _ in results)
    failures = [error for _, error in results if error is not None]
    return {
        "n": n,
        "concurrency": concurrency,
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "max_ms": round(latencies[-1], 2),
        "errors": len(failures),
        "error_samples": failures[:5],
        "seconds": round(elapsed, 3),
        "requests_per_s": round(n / elapsed, 1) if elapsed > 0 else None,
        "index": index_report or None,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url", help="where `ragdb serve` listens, e.g. http://127.0.0.1:8001")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-index", action="store_true", help="do not re-index meanwhile")
    parser.add_argument("--mode", default="hybrid")
    args = parser.parse_args(argv)
    report = load_test(args.base_url, args.n, args.concurrency, not args.no_index,
                       mode=args.mode)
    print(json.dumps(report, indent=2))
    if report["errors"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
