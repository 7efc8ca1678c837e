"""The public API is flat and the docstrings agree with the tree (issue #52, item 3).

Every scheme, ``build_scheme``, the RoPE functions, the attention and the model import from ``posenc_lib``
and from their folder; the map in ``posenc_lib/__init__.py`` names exactly the classes the registry builds,
each in the module it names; every folder's docstring lists exactly the modules in that folder; and the
two orders of pairs have one name each across the library.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest
import torch

import posenc_lib
from posenc_lib import SCHEMES, build_scheme

PACKAGE = Path(posenc_lib.__file__).parent
FOLDERS = ("embeddings", "rotary", "score_bias", "qk_bias", "conditional", "analysis", "interop")


def map_entries() -> list[tuple[str, str, str]]:
    """(folder header, class name, module path) of every scheme row in the ``posenc_lib`` docstring's map."""
    table = posenc_lib.__doc__.split("scheme                 module", 1)[1].split("build_scheme(", 1)[0]
    rows, folder = [], None
    for line in table.splitlines():
        header = re.match(r"^    (\w+/|none)\s", line + " ")
        if header:
            folder = header.group(1)
        row = re.match(r"^      (\w+)\s+([\w/]+\.py)", line)
        if row:
            rows.append((folder, row.group(1), row.group(2)))
    return rows


def built_classes() -> set[type]:
    """The class of every scheme the registry builds."""
    classes = set()
    for name in SCHEMES:
        try:
            scheme = build_scheme(name, 32, 4, max_len=16)
        except ValueError:  # a scheme of the patch grid
            scheme = build_scheme(name, 32, 4, grid=(3, 3), n_prefix=1)
        classes.add(type(scheme))
    return classes


def test_the_map_names_every_scheme_the_registry_builds_and_only_those():
    entries = map_entries()
    assert len(entries) == len(SCHEMES) and len({name for _, name, _ in entries}) == len(entries)
    assert {getattr(posenc_lib, name) for _, name, _ in entries} == built_classes()


@pytest.mark.parametrize("folder, name, module", map_entries(), ids=lambda v: v if isinstance(v, str) else None)
def test_each_scheme_of_the_map_lives_where_the_map_says_and_imports_flat(folder, name, module):
    cls = getattr(posenc_lib, name)
    assert name in posenc_lib.__all__
    assert cls.__module__ == "posenc_lib." + module.removesuffix(".py").replace("/", ".")
    if folder != "none":
        assert module.startswith(folder)
        package = importlib.import_module("posenc_lib." + folder.rstrip("/"))
        assert getattr(package, name) is cls and name in package.__all__  # from posenc_lib.rotary import RotaryPE


def test_the_flat_names_import():
    for name in posenc_lib.__all__:
        assert getattr(posenc_lib, name) is not None, name
    from posenc_lib import (  # noqa: F401  the names a reader copies into a model
        KVCache,
        MultiHeadAttention,
        TinyTransformer,
        apply_rope,
        apply_rope_qk,
        build_scheme,
        rope_cos_sin,
    )
    from posenc_lib.rotary import RotaryPE, apply_rope as from_folder  # noqa: F401

    assert from_folder is apply_rope
    for folder in FOLDERS[:5]:
        package = importlib.import_module(f"posenc_lib.{folder}")
        for name in package.__all__:
            assert getattr(package, name) is not None, (folder, name)


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_docstring_lists_exactly_its_modules(folder):
    package = importlib.import_module(f"posenc_lib.{folder}")
    listed = set(re.findall(r"^    (\w+\.py)\s", package.__doc__, flags=re.M))
    on_disk = {p.name for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"}
    assert listed == on_disk or (not listed and len(on_disk) == 1 and next(iter(on_disk)) in package.__doc__)


def test_the_core_modules_of_the_map_exist():
    core = posenc_lib.__doc__.split("The core, at the root::", 1)[1].split("Tools to measure", 1)[0]
    named = set(re.findall(r"^    (\w+\.py)\s", core, flags=re.M))
    assert named == {p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "registry.py")}


def test_one_name_per_layout_across_the_library():
    """RoPE and the sinusoidal table call the same two orders of pairs by the same names."""
    from posenc_lib.embeddings.sinusoidal import LAYOUTS as sinusoid
    from posenc_lib.frequencies import LAYOUTS
    from posenc_lib.rotary.rope import LAYOUTS as rope

    assert sinusoid is rope is LAYOUTS is posenc_lib.LAYOUTS and set(LAYOUTS) == {"half", "interleaved"}
    table = posenc_lib.embeddings.sinusoidal_table(5, 8, layout="half")  # [sin | cos]: pair i at (i, i + 4), as RoPE's
    torch.testing.assert_close(table[:, 4:], torch.cos(torch.arange(5.0)[:, None] * posenc_lib.rope_inv_freq(8)))


def test_the_version_the_package_reports_is_the_one_it_is_installed_as():
    """``posenc_lib.__version__`` and pyproject.toml's version (what pip installs and reports) are one number."""
    project = tomllib.loads((Path(posenc_lib.__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert posenc_lib.__version__ == project["project"]["version"]


def test_the_textbook_rotations_removed_in_0_3_still_import_with_a_deprecation_warning():
    """0.2's ``rotate_half_reference`` and ``apply_rope_complex`` were parallel paths; 0.3 has one rotation per layout.
    For one release the old names still import: a DeprecationWarning at the caller's line names the call that replaces
    them, and they give that call's result (within rounding of 0.2's formulas, tests/lib/rope_reference.py)."""
    from rope_reference import complex_formula, rotate_half_formula

    gen = torch.Generator().manual_seed(0)
    x, positions, inv_freq = torch.randn(2, 3, 7, 8, generator=gen), torch.randint(0, 500, (2, 7), generator=gen), \
        posenc_lib.rope_inv_freq(6)  # partial rotation: the last 2 dims pass through
    cos, sin = posenc_lib.rope_cos_sin(positions, inv_freq)
    with pytest.warns(DeprecationWarning, match=r'use apply_rope\(x, cos, sin, layout="half"\)') as caught:
        from posenc_lib.rotary.rope import rotate_half_reference
    assert caught[0].filename == __file__
    torch.testing.assert_close(rotate_half_reference(x, cos, sin), posenc_lib.apply_rope(x, cos, sin, "half", rotary_dim=2 * cos.shape[-1]),
                               atol=0, rtol=0)
    torch.testing.assert_close(rotate_half_reference(x, cos, sin), rotate_half_formula(x, cos, sin))
    with pytest.warns(DeprecationWarning, match=r'layout="interleaved"\); apply_rope_complex will be removed in '
                                                r'posenc_lib 0.4'):
        apply_rope_complex = posenc_lib.rotary.rope.apply_rope_complex
    torch.testing.assert_close(apply_rope_complex(x, positions, inv_freq), complex_formula(x, positions, inv_freq))
    x64 = x.double()
    torch.testing.assert_close(apply_rope_complex(x64, positions, inv_freq.double()),
                               complex_formula(x64, positions, inv_freq.double()), atol=1e-12, rtol=0)
    with pytest.raises(AttributeError, match="no attribute 'apply_rope_fast'"):
        posenc_lib.rotary.rope.apply_rope_fast  # noqa: B018  any other name is still an error
    assert "apply_rope_complex" not in posenc_lib.rotary.rope.__all__
