"""The reference numerics as environment variables for this machine, for make and the Jupyter kernel.

    python tools/numerics_env.py                  # KEY=VALUE lines (the Makefile passes them to `env`)
    python tools/numerics_env.py --install-kernel # make the project kernel start with them

The settings live in ``posenc_course/reference_numerics.json`` (see ``posenc_course/numerics.py`` for
what each one pins). They apply to x86-64 processors with AVX2; elsewhere (Apple Silicon, very old
x86) only the thread count is fixed, and the probe digest tells ``make test`` that outputs can differ.
This script imports no torch: the variables must be in the environment before torch starts.

The kernel gets them through its launch command, unless its environment already carries
``POSENC_NUM_THREADS``: that variable says the caller chose the numerics itself (make exports the
reference ones; ``make numerics-matrix`` sets others, including "all unset" for the machine's
native kernels). A kernelspec's ``env`` map could not express that: it overrides the caller's
environment. ``make setup`` installs the kernel.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "posenc_course" / "reference_numerics.json"
KERNEL_NAME = "python3"
DISPLAY_NAME = "Python 3 (posenc)"

# Started as `python -c LAUNCH -f {connection_file}`: the numerics first, then the ordinary IPython kernel.
LAUNCH = ("import os; 'POSENC_NUM_THREADS' in os.environ or os.environ.update({env!r}); "
          "from ipykernel import kernelapp; kernelapp.launch_new_instance()")


def has_avx2() -> bool:
    """Whether this processor runs AVX2 code (Linux: /proc/cpuinfo; macOS on Intel: sysctl)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        return " avx2" in cpuinfo.read_text(encoding="utf-8", errors="replace")
    import subprocess  # macOS and other systems without /proc

    result = subprocess.run(["sysctl", "-n", "machdep.cpu.leaf7_features"], capture_output=True, text=True)
    return "AVX2" in result.stdout.upper()


def machine_env() -> dict[str, str]:
    """The variables that give the reference numerics here (threads alone where AVX2 is missing)."""
    record = json.loads(REFERENCE.read_text(encoding="utf-8"))
    threads = str(record["threads"])
    env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "POSENC_NUM_THREADS": threads}
    if has_avx2():
        env.update(record["settings"])
    return env


def kernel_argv() -> list[str]:
    """The project kernel's command: :data:`LAUNCH` with :func:`machine_env`, loading the course's IPython
    extension (posenc_course.kernel: a NameError before the setup cell points to it)."""
    return [sys.executable, "-c", LAUNCH.format(env=machine_env()), "-f", "{connection_file}",
            "--IPKernelApp.extensions=posenc_course.kernel"]


def install_kernel() -> Path:
    """Install the project's kernelspec into this Python's prefix, launching with :func:`machine_env`."""
    from ipykernel.kernelspec import install

    spec_file = Path(install(kernel_name=KERNEL_NAME, display_name=DISPLAY_NAME, prefix=sys.prefix)) / "kernel.json"
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    spec["argv"] = kernel_argv()
    spec_file.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    return spec_file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--install-kernel", action="store_true", help="install the project kernel with them")
    args = parser.parse_args(argv)
    if args.install_kernel:
        print(f"installed kernel {KERNEL_NAME!r} ({DISPLAY_NAME}): {install_kernel()}")
    else:
        print("\n".join(f"{key}={value}" for key, value in machine_env().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
