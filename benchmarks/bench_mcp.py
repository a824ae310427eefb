"""MCP search latency: `ragdb mcp` started once over stdio, then the public questions (each
asked once, so no query cache hit) sent as `search` tool calls through the official client;
round trips measured on the client side.

    uv run --frozen python -m benchmarks.bench_mcp [--db data/bench/any.db] [--mode lexical]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from benchmarks.common import SETS, dataset, host_line, percentile
from ragdb.schemas import RagDataset


async def measure(db: Path, mode: str, k: int, n: int) -> list[float]:
    questions = [q.question for name in SETS for q in RagDataset.model_validate_json(
        dataset(name, False).read_text()).rag_questions][:n]
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ragdb", "mcp", "--db", str(db)])
    times = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("search", {"query": "warm up", "k": k, "mode": mode})
            for question in questions:
                started = time.perf_counter()
                result = await session.call_tool("search",
                                                 {"query": question, "k": k, "mode": mode})
                times.append(time.perf_counter() - started)
                assert not result.is_error, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/bench/any.db"))
    parser.add_argument("--mode", default="lexical")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--n", type=int, default=199)
    args = parser.parse_args()
    times = anyio.run(measure, args.db, args.mode, args.k, args.n)
    print(host_line())
    print(f"MCP search ({args.mode}, k={args.k}) over stdio, {len(times)} distinct questions: "
          f"p50 {statistics.median(times) * 1000:.1f} ms, "
          f"p95 {percentile(times, 0.95) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
