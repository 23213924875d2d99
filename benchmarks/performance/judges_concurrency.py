"""Judge throughput vs concurrency against the local fault server (no faults, 300 ms +- 50 ms latency).

For each concurrency c in (1, 4, 16, 64) the full judge path runs (openai AsyncOpenAI client,
limiter checks, parsing, one atomic JSON record per call) over 20*c text requests (at least 20) into
a fresh temporary output dir, against tests/support/fault_server.py on 127.0.0.1 with injected latency
uniform(0.25, 0.35) s. Reported: calls/s (chat requests / wall seconds of the run, preflight
included), the ideal c / 0.3 s, and the fraction of ideal (target >= 0.90 at c = 16). A last row
runs c = 16 with ``rpm: 600, burst_s: 1`` to show the requests-per-minute bucket capping throughput
(bucket of 10 requests, then 10/s). The server runs in its own process.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/judges_concurrency.py [--latency 0.3] [--jitter 0.05]

Writes benchmarks/out/judges_concurrency.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from modprefs.io import write_json  # noqa: E402
from modprefs.judges import JudgeItem, run_judges  # noqa: E402

KEY_ENV = "MODPREFS_BENCH_JUDGE_KEY"


class Server:
    """tests/support/fault_server.py in its own process (so that its threads do not share the GIL with the
    client being measured)."""

    def __init__(self, latency_s: float, jitter_s: float) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.latency_s = latency_s
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests/support/fault_server.py"),
                "--port",
                str(self.port),
                "--fault-rate",
                "0",
                "--latency",
                str(latency_s),
                "--jitter",
                str(jitter_s),
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                req = urllib.request.Request(self.url + "/models", headers={"Authorization": "Bearer test-key"})
                urllib.request.urlopen(req, timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def one(srv: Server, concurrency: int, n_calls: int, rpm=None, burst_s=None) -> dict:
    items = [
        JudgeItem(
            f"b{i}",
            f"b{i}_0",
            "text",
            "response_quality",
            [],
            f"Benchmark question {i}?",
            response_text=f"Benchmark answer {i}.",
        )
        for i in range(n_calls)
    ]
    cfg = dict(
        base_url=srv.url,
        api_key_env=KEY_ENV,
        samples_per_item=1,
        max_concurrency=concurrency,
        rpm=rpm,
        burst_s=burst_s or 10.0,
        tpm=None,
        timeout_s=10,
        progress=False,
    )
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        res = run_judges(items, cfg, Path(tmp) / "out")
        wall = time.perf_counter() - t
    assert res.stats.ok == n_calls and res.stats.http_calls == n_calls, res.stats
    ideal = concurrency / srv.latency_s
    if rpm:  # the bucket starts full (rate * burst_s), then refills at rpm / 60 per second
        burst = max(1.0, rpm / 60 * burst_s)
        ideal = min(ideal, n_calls / ((n_calls - burst) / (rpm / 60) + srv.latency_s))
    return {
        "concurrency": concurrency,
        "rpm": rpm,
        "burst_s": burst_s,
        "calls": n_calls,
        "wall_s": round(wall, 3),
        "calls_per_s": round(n_calls / wall, 2),
        "ideal_calls_per_s": round(ideal, 2),
        "fraction_of_ideal": round(n_calls / wall / ideal, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--jitter", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/out/judges_concurrency.json"))
    args = ap.parse_args()
    os.environ[KEY_ENV] = "test-key"
    rows = []
    load_before = os.getloadavg()[0]
    with Server(args.latency, args.jitter) as srv:
        one(srv, 4, 8)  # warm-up (imports, connection pool)
        for c in args.concurrency:
            rows.append(one(srv, c, max(20, 20 * c)))
            print(json.dumps(rows[-1]), flush=True)
        rows.append(one(srv, 16, 40, rpm=600, burst_s=1.0))
        print(json.dumps(rows[-1]), flush=True)
    at16 = next((r for r in rows if r["concurrency"] == 16 and not r["rpm"]), None)
    out = {
        "benchmark": "judges_concurrency",
        "server": "tests/support/fault_server.py in a separate process (ThreadingHTTPServer, 127.0.0.1), no faults",
        "latency_s": args.latency,
        "jitter_s": args.jitter,
        "rows": rows,
        "target": "fraction_of_ideal >= 0.90 at concurrency 16",
        "target_met": bool(at16 and at16["fraction_of_ideal"] >= 0.90),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg_1m_before": round(load_before, 2),
        "load_avg_1m_after": round(os.getloadavg()[0], 2),
    }
    write_json(out, args.out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
