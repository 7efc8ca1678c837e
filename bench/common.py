"""Measurement tools shared by the benchmarks: interleaved timing, peak memory, machine facts.

Timing: every case is a ``torch.utils.benchmark.Timer`` with a fixed thread count. Cases are
measured in interleaved rounds (round 1: case A, B, C; round 2: B, C, A; ...), so a burst of load
from another process hits all cases alike, and each case reports the median over rounds. A round
during which other processes took CPU (:func:`other_cores`: the machine's busy CPU time, from
``/proc/stat``, less this process's own) is thrown away and measured again, after a pause.

Peak memory: ``torch.profiler`` with ``profile_memory=True`` records every allocation and free
that goes through PyTorch's CPU allocator (every tensor, including scratch tensors inside
kernels) together with the running total; the peak is the largest running total during the
call, counted from zero at its start (tensors that existed before are not counted).
PyTorch's CPU allocator does not cache, so these are the bytes the process really asks for.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# libkineto (the profiler's backend) prints two log lines per profiling session; level 6 silences
# them. It reads the variable when the profiler first starts, so setting it here is early enough.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils.benchmark import Timer  # noqa: E402

__all__ = [
    "Timing",
    "interleaved_times",
    "cpu_snapshot",
    "other_cores",
    "allocation_profile",
    "load_average",
    "machine_info",
    "machine_markdown",
    "format_seconds",
    "format_bytes",
]


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one case: the median over rounds, and every round's value.

    ``discarded``: rounds measured and thrown away because other processes took CPU meanwhile;
    ``other_cores``: the largest CPU use of other processes (in cores) during a round that was kept.
    """

    median: float
    samples: tuple[float, ...]
    discarded: int = 0
    other_cores: float | None = None

    @property
    def spread(self) -> float:
        """Interquartile range over rounds divided by the median (0.05 = the middle half within 5 %)."""
        if len(self.samples) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return (q3 - q1) / self.median


def _busy_seconds() -> float | None:
    """CPU-seconds all cores of the machine have been busy since boot (Linux ``/proc/stat``: user, nice, system,
    irq, softirq, steal), or None where the system does not say."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot() -> tuple[float | None, float, float]:
    """(the machine's busy CPU-seconds or None, this process's CPU-seconds, a wall clock): where :func:`other_cores` starts."""
    times = os.times()
    return _busy_seconds(), times.user + times.system, time.perf_counter()


def other_cores(since: tuple[float | None, float, float]) -> float | None:
    """Cores' worth of CPU that other processes used since the :func:`cpu_snapshot` ``since``: the machine's busy
    time less this process's, over the wall time; None where the system does not report busy time."""
    busy, own, wall = since
    now = _busy_seconds()
    if busy is None or now is None:
        return None
    times = os.times()
    return max(0.0, (now - busy) - (times.user + times.system - own)) / max(time.perf_counter() - wall, 1e-9)


def interleaved_times(
    cases: Mapping[str, Callable[[], object]],
    rounds: int,
    threads: int,
    min_block_s: float = 0.02,
    reset: Mapping[str, Callable[[], object]] | None = None,
    max_other_cores: float | None = None,
    max_tries: int = 30,
    pause_s: float = 2.0,
) -> dict[str, Timing]:
    """Time every case in ``rounds`` interleaved rounds; return the median seconds per call of each.

    In each round every case gets one ``Timer.blocked_autorange(min_run_time=min_block_s)``: its
    warm-up picks how many calls make a block, then it times blocks until ``min_block_s`` has
    passed; the round's value is the median block. Round ``r`` starts at case ``r mod n``, so no
    case always follows the same neighbour. ``reset[name]``, if given, runs (untimed) before each of
    that case's rounds, e.g. to restore tensors that the case modifies in place.

    ``max_other_cores``: a round during which other processes used more CPU than this many cores
    (:func:`other_cores`) is discarded and measured again after ``pause_s`` seconds, up to ``max_tries``
    times per round (then the last try is kept; its load shows in ``Timing.other_cores``).
    """
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if not cases:
        raise ValueError("cases must name at least one function to time, got an empty mapping")
    reset = dict(reset or {})
    if not set(reset) <= set(cases):
        raise ValueError(f"reset names cases that do not exist: {sorted(set(reset) - set(cases))}")
    timers = {name: Timer("fn()", globals={"fn": fn}, num_threads=threads) for name, fn in cases.items()}
    names = list(timers)
    samples: dict[str, list[float]] = {name: [] for name in names}
    discarded, worst = 0, None
    for r in range(rounds):
        start = r % len(names)
        for attempt in range(max_tries):
            since = cpu_snapshot()
            measured = {}
            for name in names[start:] + names[:start]:
                if name in reset:
                    reset[name]()
                measured[name] = timers[name].blocked_autorange(min_run_time=min_block_s).median
            load = other_cores(since)
            if max_other_cores is None or load is None or load <= max_other_cores or attempt == max_tries - 1:
                break
            discarded += 1
            time.sleep(pause_s)
        for name, value in measured.items():
            samples[name].append(value)
        if load is not None:
            worst = load if worst is None else max(worst, load)
    return {name: Timing(statistics.median(s), tuple(s), discarded, worst) for name, s in samples.items()}


def allocation_profile(fn: Callable[[], object]) -> tuple[int, int]:
    """Run ``fn`` once under the memory profiler; return (peak, retained) bytes, counted from the call's start.

    peak: the largest net number of bytes allocated since the start of the call (what ``fn``
    returns is released inside, after it has counted); retained: the net bytes still held at the
    end (parameters, buffers or caches that ``fn`` created and kept). The profiler's running
    total also counts tensors from earlier profiled calls that are still alive, so both numbers
    are taken relative to the total just before the call's first allocation.
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
        del result
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            events = [e["args"] for e in json.load(fh)["traceEvents"] if e.get("name") == "[memory]"]
    events.sort(key=lambda args: args["Ev Idx"])
    if not events:
        return 0, 0
    baseline = events[0]["Total Allocated"] - events[0]["Bytes"]
    totals = [args["Total Allocated"] - baseline for args in events]
    return max(0, *totals), totals[-1]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    """The system's load average over 1, 5 and 15 minutes ("n/a" where the OS does not report it)."""
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except (AttributeError, OSError):
        return "n/a"


def machine_info(threads: int, load_before: str | None = None) -> dict[str, str]:
    """The facts a reader needs to compare these numbers with their own.

    ``load_before``: :func:`load_average` when the run began; with the load now, it tells how busy
    the machine was (other processes on the same cores widen the spread over rounds).
    """
    load = {} if load_before is None else {
        "load average (1 / 5 / 15 min), at the start; at the end": f"{load_before}; {load_average()}"}
    return {
        "CPU": _cpu_model(),
        "cores visible": str(os.cpu_count()),
        "torch threads (Timer num_threads)": str(threads),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "unset"),
        "MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_": " / ".join(
            os.environ.get(name, "unset") for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")),
        "torch": torch.__version__,
        "Python": platform.python_version(),
        "date (UTC)": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        **load,
    }


def machine_markdown(info: Mapping[str, str]) -> str:
    """Machine facts as a markdown bullet list."""
    return "\n".join(f"- {key}: {value}" for key, value in info.items())


def format_seconds(seconds: float) -> str:
    """123 µs / 12.3 ms / 1.23 s, three significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")


def format_bytes(n: float) -> str:
    """Bytes in KiB/MiB/GiB, three significant digits."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            value = n / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n:.0f} B"
