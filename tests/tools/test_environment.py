"""The pinned environment: requirements.txt is the single source of exact pins, and the venv matches it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)$")


def requirement_lines() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def pins() -> dict[str, str]:
    return {canonicalize_name(m["name"]): m["version"] for m in map(PIN.match, requirement_lines()) if m}


def direct_dependencies() -> list[str]:
    """The packages the course uses itself: the first block of requirements.txt, up to the next comment."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    block = text.split("# --- used directly", 1)[1].split("\n# ---", 1)[0]
    return [PIN.match(line.strip())["name"] for line in block.splitlines()[1:] if PIN.match(line.strip())]


# The project's own packages, and the folders whose Python files are scanned for imports.
LOCAL = {"posenc_lib", "posenc_course", "bench", "tools"}
CODE = ("posenc_lib", "posenc_course", "bench", "tools", "tests", "notebooks")
# Direct dependencies that are run (as a program, pytest plugin or Sphinx extension) rather than
# imported: the file and the text that uses each one.
RUN_NOT_IMPORTED = {
    "jupyterlab": ("tools/lab.py", '"-m", "jupyterlab"'),
    "nbval": ("Makefile", "pytest --nbval"),
    "pytest-xdist": ("Makefile", "--dist loadfile"),
    "myst-nb": ("tools/site/conf.py", '"myst_nb"'),
    "sphinx-book-theme": ("tools/site/conf.py", 'html_theme = "sphinx_book_theme"'),
    "sphinx-copybutton": ("tools/site/conf.py", '"sphinx_copybutton"'),
}


def imported_distributions(*folders: str) -> dict[str, set[str]]:
    """Distribution -> the files that import it, over every .py file under ``folders`` (third-party only)."""
    distributions = metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    local_test_module = (path.parent / f"{top}.py").exists()  # one test importing another
                    if top in sys.stdlib_module_names or top in LOCAL or top == "__future__" or local_test_module:
                        continue
                    assert top in distributions, f"{path.relative_to(ROOT)} imports {top}, which no installed package provides"
                    for name in distributions[top]:
                        found.setdefault(canonicalize_name(name), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_requirement_is_an_exact_pin():
    bad = [line for line in requirement_lines() if not PIN.match(line)]
    assert not bad, f"requirements.txt lines that are not 'name==version': {bad}"
    names = [canonicalize_name(PIN.match(line)["name"]) for line in requirement_lines()]
    assert len(names) == len(set(names)), "a package is pinned twice"


def test_environment_yml_installs_exactly_requirements_txt():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [["-r requirements.txt", "-e ."]]
    assert [d for d in deps if isinstance(d, str)] == ["python=3.11", "pip"], "pins belong in requirements.txt only"


@pytest.mark.parametrize("name", direct_dependencies())
def test_installed_version_equals_the_pin(name):
    """Guards against a stale venv: re-run `make setup` (or touch requirements.txt) if this fails."""
    expected = pins()[canonicalize_name(name)]
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{name} is pinned to {expected} in requirements.txt but not installed")
    assert installed.split("+")[0] == expected, f"{name}: installed {installed}, pinned {expected}"


def test_pyproject_dependencies_are_satisfied_by_the_pins():
    """posenc-lib's own dependencies (pyproject.toml) must all be pinned, at versions they accept."""
    requirements = [Requirement(r) for r in metadata.requires("posenc-lib") or []]
    assert requirements, "posenc-lib is not installed in this environment (pip install -e .)"
    for req in requirements:
        pinned = pins().get(canonicalize_name(req.name))
        assert pinned is not None, f"{req.name} is a dependency of posenc-lib but not pinned in requirements.txt"
        assert req.specifier.contains(pinned), f"{req.name}: pinned {pinned} does not satisfy {req}"


def test_the_library_declares_exactly_what_it_imports():
    """pyproject's dependencies are the third-party packages posenc_lib imports: none missing, none unused."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    imported = imported_distributions("posenc_lib")
    assert set(imported) - declared == set(), f"imported by posenc_lib, not in pyproject dependencies: {imported}"
    assert declared - set(imported) == set(), "in pyproject dependencies, imported nowhere in posenc_lib"


def test_everything_imported_is_a_direct_pin_and_every_direct_pin_is_used():
    direct = {canonicalize_name(n) for n in direct_dependencies()}
    imported = imported_distributions(*CODE)
    undeclared = {name: sorted(files) for name, files in imported.items() if name not in direct}
    assert not undeclared, f"imported but not in the direct block of requirements.txt: {undeclared}"
    for name in sorted(direct - set(imported)):
        assert name in RUN_NOT_IMPORTED, f"{name} is a direct dependency in requirements.txt but nothing imports or runs it"
        path, text = RUN_NOT_IMPORTED[name]
        assert text in (ROOT / path).read_text(encoding="utf-8"), f"{name}: {text!r} not found in {path}"
