"""The reference numerics: one record, applied by make and the kernel, checked by measurement."""

from __future__ import annotations

import os

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from posenc_course import numerics
from tools import numerics_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_probe_is_repeatable_and_leaves_the_random_state_alone():
    state = torch.random.get_rng_state()
    first = numerics.probe_digest()
    assert torch.equal(torch.random.get_rng_state(), state)
    assert numerics.probe_digest() == first and len(first) == 64


def test_the_probe_sees_a_slightly_different_kernel(monkeypatch):
    """A digest that survived another rounding would make strict mode unsafe: swap one kernel for a
    close approximation (GELU's tanh form differs from the exact one by < 1e-3)."""
    before = numerics.probe_digest(steps=3)
    monkeypatch.setattr(torch.nn.GELU, "forward", lambda self, x: torch.nn.functional.gelu(x, approximate="tanh"))
    assert numerics.probe_digest(steps=3) != before


def test_check_says_which_and_fails_where_the_digest_differs(tmp_path, monkeypatch, capsys):
    record = numerics.reference()
    fake = tmp_path / "reference_numerics.json"
    monkeypatch.setattr(numerics, "REFERENCE_FILE", fake)
    fake.write_text(json.dumps({**record, "digest": numerics.probe_digest()}))
    assert numerics._main(["--check"]) == 0
    assert "the course's reference" in capsys.readouterr().out
    fake.write_text(json.dumps({**record, "digest": "0" * 64}))
    assert numerics._main(["--check"]) == 1
    line = capsys.readouterr().out
    assert "not the course's reference" in line and "last digits" in line and "assertion" in line
    with pytest.raises(SystemExit, match="usage"):
        numerics._main(["--bogus"])


def test_record_writes_only_the_digest(tmp_path, monkeypatch):
    fake = tmp_path / "reference_numerics.json"
    fake.write_text(json.dumps({"settings": {"MKL_CBWR": "COMPATIBLE"}, "threads": 1, "digest": ""}))
    monkeypatch.setattr(numerics, "REFERENCE_FILE", fake)
    assert "recorded (was empty)" in numerics.record_reference("ab" * 32)
    assert json.loads(fake.read_text()) == {"settings": {"MKL_CBWR": "COMPATIBLE"}, "threads": 1, "digest": "ab" * 32}


def test_the_machine_env_is_the_record(monkeypatch):
    record = numerics.reference()
    monkeypatch.setattr(numerics_env, "has_avx2", lambda: True)
    env = numerics_env.machine_env()
    assert record["settings"].items() <= env.items()
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == env["POSENC_NUM_THREADS"] == str(record["threads"])
    monkeypatch.setattr(numerics_env, "has_avx2", lambda: False)  # Apple Silicon, old x86: threads only
    assert set(numerics_env.machine_env()) == {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "POSENC_NUM_THREADS"}


def test_the_kernel_launcher_applies_the_record_unless_the_caller_chose():
    """Run the launch line's first statement as the kernel would, with and without POSENC_NUM_THREADS."""
    prefix = numerics_env.LAUNCH.format(env=numerics_env.machine_env()).split("; from ipykernel")[0]
    show = prefix + "; print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('MKL_CBWR'))"
    env = {"PATH": "/usr/bin:/bin"}
    fresh = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, check=True)
    assert fresh.stdout.split()[0] == "1"
    chosen = subprocess.run([sys.executable, "-c", show], env={**env, "POSENC_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split() == ["2", "None"]


def test_the_installed_kernel_launches_with_the_record():
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(numerics_env.KERNEL_NAME)
    assert spec.display_name == numerics_env.DISPLAY_NAME
    assert spec.argv[1:3] == ["-c", numerics_env.LAUNCH.format(env=numerics_env.machine_env())], (
        "the project kernel is stale: run `make setup`")


def test_the_makefile_exports_the_machine_env():
    out = subprocess.run(["make", "-s", "-f", "-", "show"], cwd=ROOT, capture_output=True, text=True, check=True,
                         input="include Makefile\nshow:\n\t@env\n").stdout
    exported = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert numerics_env.machine_env().items() <= exported.items()


def test_setup_notebook_is_silent_on_the_reference_and_says_one_plain_sentence_elsewhere(monkeypatch, capsys):
    from posenc_course.training import setup_notebook

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("POSENC_NUM_THREADS", "2")
        monkeypatch.setattr(numerics, "reproduces_reference", lambda: True)
        setup_notebook(0)
        assert torch.get_num_threads() == 2
        assert capsys.readouterr().out == ""
        monkeypatch.setattr(numerics, "reproduces_reference", lambda: False)
        setup_notebook(0)
        lines = capsys.readouterr().out.splitlines()
        assert lines == [numerics.DIFFERS]
        for jargon in ("AVX", "oneDNN", "MKL", "kernel", "thread", "CPU", "digest"):
            assert jargon.lower() not in lines[0].lower(), jargon
        monkeypatch.setenv("POSENC_NUM_THREADS", "two")
        with pytest.raises(ValueError, match="POSENC_NUM_THREADS must be a positive integer, got 'two'"):
            setup_notebook(0)
    finally:
        torch.set_num_threads(before)


# --- inductor's cache, one folder per forced kernel level (posenc_course.numerics.separate_inductor_cache) ---


def test_each_forced_kernel_level_compiles_into_its_own_inductor_cache(monkeypatch):
    """A kernel compiled under the native level and reused under ATEN_CPU_CAPABILITY=avx2 returned NaN here:
    the tests and the bench give every forced level its own cache folder, and leave a chosen folder, or none
    forced, alone."""
    from posenc_course.numerics import separate_inductor_cache

    folders = {}
    for level in ("avx2", "default"):
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", level)
        monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
        separate_inductor_cache()
        folders[level] = os.environ["TORCHINDUCTOR_CACHE_DIR"]
        assert folders[level].endswith(f"_{level}")
    assert folders["avx2"] != folders["default"]
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/chosen")
    separate_inductor_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/chosen"
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    separate_inductor_cache()
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ  # native: inductor's own default
