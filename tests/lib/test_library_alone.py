"""The library stands alone: torch is all it needs (issue #35, item 1).

In a fresh interpreter, importing ``posenc_lib`` and everything under it, building every registered
scheme, and running attention and the tiny model loads no module of the course's own environment
(pandas, matplotlib, transformers, ipywidgets, joblib, tqdm) and nothing of ``posenc_course``,
``tools`` or ``bench``. ``import torch`` itself may load some of them (torch.hub imports tqdm when it
is installed), so only the modules that appear *after* torch count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COURSE_ONLY = {"pandas", "matplotlib", "transformers", "ipywidgets", "joblib", "tqdm", "IPython", "numpy",
               "posenc_course", "tools", "bench"}

SCRIPT = r"""
import importlib, json, pkgutil, sys
import torch
before = set(sys.modules)
import posenc_lib
from posenc_lib import SCHEMES, MultiHeadAttention, TinyTransformer, build_scheme
for info in pkgutil.walk_packages(posenc_lib.__path__, "posenc_lib."):
    importlib.import_module(info.name)
built = []
for name in SCHEMES:
    try:
        scheme = build_scheme(name, 32, 4, max_len=16)
        grid = False
    except ValueError:
        scheme, grid = build_scheme(name, 32, 4, grid=(3, 3), n_prefix=1), True
    model = TinyTransformer(13, 5, d_model=32, n_heads=4, n_layers=1, scheme=scheme, causal=not grid, pool="none")
    with torch.no_grad():
        out = model(torch.randint(0, 13, (2, 10)))
    assert out.shape == (2, 10, 5), out.shape
    built.append(name)
attention = MultiHeadAttention(32, 4, build_scheme("rope", 32, 4))
assert attention(torch.randn(2, 7, 32), causal=True).shape == (2, 7, 32)
new = sorted({m.split(".")[0] for m in set(sys.modules) - before})
print(json.dumps({"built": built, "new": new}))
"""


def test_importing_the_library_and_building_every_scheme_loads_no_course_package():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT / "tests",
                         check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    from posenc_lib import SCHEMES

    assert result["built"] == list(SCHEMES)
    assert set(result["new"]) & COURSE_ONLY == set(), f"the library loaded course packages: {result['new']}"


def test_the_package_installs_the_library_alone_with_torch_as_its_one_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert [d.split(">")[0].split("=")[0] for d in project["project"]["dependencies"]] == ["torch"]
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["posenc_lib*"]
    assert "hf" in project["project"]["optional-dependencies"]
