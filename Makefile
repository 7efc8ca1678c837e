# posenc: every target sets up .venv itself when it is missing or stale.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
KERNEL := $(VENV)/.kernel

# The reference numerics (posenc_course/numerics.py): one intra-op thread, and on x86-64 with AVX2 the
# kernel settings that make most of the course's operations round alike on Intel and AMD CPUs
# (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2, MKL_CBWR=COMPATIBLE; not all: see docs/reproducibility.md). tools/numerics_env.py reads them from
# posenc_course/reference_numerics.json; every target below runs with them, the project's Jupyter
# kernel starts with them, and `make numerics-matrix` runs the notebooks under other settings.
# One thread: the course's models are tiny, and a second OpenMP thread only adds synchronisation
# (measured here: 200 training steps took 1.7 s on one thread, 17-30 s on two while another
# process was busy). The benchmark sets its own thread count and kernels (see `bench`).
NUMERICS := $(shell $(PYTHON) tools/numerics_env.py)
$(foreach setting,$(NUMERICS),$(eval export $(setting)))
export PYTHONHASHSEED := 0
# Progress bars print only their first and final state, with no rate or time,
# so executed notebooks are byte-identical run to run.
export POSENC_DETERMINISTIC := 1
export TOKENIZERS_PARALLELISM := false
export HF_HUB_OFFLINE := 1

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
# Tests run in parallel, one whole file (or notebook) per worker, one thread each.
JOBS ?= 2

.PHONY: help setup chromium test unit nbval nbval-flags check-lab numerics-matrix execute sync html student check-site lab bench clean \
	i18n-update i18n-status i18n-check checkpoints-06

help:
	@echo "make test    - unit tests (a few pages of the site checked in headless Chromium among them) + nbval, one session"
	@echo "               (strict where this machine reproduces the reference numerics, lax elsewhere)"
	@echo "make numerics-matrix - execute every notebook under other CPU kernel settings and thread counts"
	@echo "make html    - execute every notebook into build/ and render the site: build/html/index.html,"
	@echo "               and in Chinese: build/html/zh_CN/index.html (HTMLFLAGS=--no-execute: the committed outputs)"
	@echo "make i18n-update - extract the English and update the Chinese catalogs (locale/zh_CN/, docs/i18n.md)"
	@echo "make i18n-status - per page: entries translated, fuzzy, untranslated, stale (i18n-check: every problem,"
	@echo "               errors first, then what is out of date; make test fails on errors only)"
	@echo "make student - the student edition (solutions removed) in build/student/ (中文: build/student/zh/)"
	@echo "make check-site - the browser check's own tests, then every page of both sites in headless Chromium (CI runs it)"
	@echo "make check-lab  - the JupyterLab session in headless Chromium (tests/tools/test_lab.py; CI runs it)"
	@echo "make lab     - open the series in JupyterLab (tools/lab.py: live progress, no news pop-up);"
	@echo "               the Chinese notebooks (中文版) are generated into notebooks/zh/ first"
	@echo "make sync    - pair notebooks/*.py and *.ipynb with jupytext"
	@echo "make execute - re-execute notebooks in place, deterministically"
	@echo "make bench   - RoPE and position-scheme benchmarks"
	@echo "make checkpoints-06 - retrain notebook 06's 21 base models into data/checkpoints/06/ (CKPT_JOBS=2 at a time)"
	@echo "make setup   - create .venv with the pinned environment"
	@echo "make clean   - remove build outputs and caches (keeps .venv)"

setup: $(STAMP) $(KERNEL) chromium

# The browser check (tests/tools/test_site.py, tools/check_site.py) drives Debian's chromium package, and
# needs a Chinese font: the check fails on the Chinese site (build/html/zh_CN/) when its text is drawn as
# missing-glyph boxes. fonts-wqy-microhei is small (1.6 MB) and is one of the fonts the site names.
CHROMIUM := /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { echo "installing chromium (for the site's browser check)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-wqy-microhei >/dev/null; }
	@test -x $(CHROMIUM) || { echo "make: $(CHROMIUM) is missing; install Debian's chromium package" >&2; exit 1; }
	@test -n "$$(fc-list :lang=zh family 2>/dev/null)" || { echo "installing a Chinese font (for the Chinese site's browser check)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-wqy-microhei >/dev/null; }
	@test -n "$$(fc-list :lang=zh family 2>/dev/null)" || { echo "make: no Chinese font; install fonts-wqy-microhei" >&2; exit 1; }

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# the course package, tools and bench are not installed: the repository goes on the venv's path instead
	$(PY) -c 'import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()["purelib"], "posenc-course.pth").write_text("$(CURDIR)\n")'
	@touch $@

# The project kernel ("Python 3 (posenc)") starts with the reference numerics (tools/numerics_env.py).
$(KERNEL): $(STAMP) posenc_course/reference_numerics.json tools/numerics_env.py
	$(PY) tools/numerics_env.py --install-kernel >/dev/null
	@touch $@

# The unit tests and the notebooks (nbval, as `make nbval` runs it) in one pytest session on $(JOBS) workers, so
# that neither part's last file leaves a core idle while the other waits (tests/conftest.py orders the work: the
# notebooks longest first, then the longest test files, then the rest). `make unit` and `make nbval` run one part.
test: $(STAMP) $(KERNEL) chromium
	@start=$$(date +%s); status=0; \
	flags=$$($(MAKE) --no-print-directory -s nbval-flags) || exit 1; \
	POSENC_WORKERS=1 $(PY) -m pytest -n $(JOBS) --dist loadfile -p no:cacheprovider -m "$(UNIT_MARKS)" tests \
		--nbval $$flags --nbval-sanitize-with tools/nbval_sanitize.cfg \
		$$($(PY) -m tools.catalog --longest-first $(NOTEBOOKS)) || status=1; \
	echo "make test: $$(( $$(date +%s) - start )) s in total, $$([ $$status = 0 ] && echo passed || echo FAILED)"; \
	exit $$status

# pytest exits with status 5 when it collects no test, which fails the target. The JupyterLab session and the
# browser check's own tests (markers in pyproject.toml) run in `make check-lab` and `make check-site`, which CI runs.
UNIT_MARKS := not jupyterlab and not checksite
unit: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadfile -m "$(UNIT_MARKS)" tests

# The JupyterLab session in headless Chromium (tests/tools/test_lab.py, marked jupyterlab: about 75 s): CI runs it
# beside `make test`, which it would push past 10 minutes.
check-lab: $(STAMP) $(KERNEL) chromium
	$(PY) -m pytest -m jupyterlab tests/tools/test_lab.py

# Without notebooks, a bare `pytest --nbval` would fall back to testpaths and rerun the unit tests.
# Strict (every output compared) where the probe digest equals the one recorded with the committed
# notebooks; elsewhere lax: every cell still runs with its assertions, and only the outputs that
# `make numerics-matrix` found identical under every setting (tag nbval-check-output) are compared.
# xdist runs two notebooks at once, the longest first (catalog run times), so each notebook trains its
# runs one after the other (POSENC_WORKERS=1; run_each's results do not depend on it).
nbval: $(STAMP) $(KERNEL)
	@flags=$$($(MAKE) --no-print-directory -s nbval-flags) || exit 1; \
	POSENC_WORKERS=1 $(PY) -m pytest --nbval $$flags --nbval-sanitize-with tools/nbval_sanitize.cfg -p no:cacheprovider \
		-n $(JOBS) --dist loadfile $$($(PY) -m tools.catalog --longest-first $(NOTEBOOKS))

# nbval's flags for this machine (none: strict; --nbval-lax), on stdout; what was chosen and why, on stderr.
nbval-flags: $(STAMP)
	@test -n "$(NOTEBOOKS)" || { echo "make nbval: no notebooks/[0-9][0-9]_*.ipynb to validate" >&2; exit 1; }
	@if $(PY) -m posenc_course.numerics --check >&2; then \
		echo "make nbval: strict comparison: this machine reproduces the reference numerics (probe digest)" >&2; \
	else \
		echo "make nbval: lax comparison: the probe digest differs from the reference, so every cell runs with its" \
		     "assertions but only outputs tagged nbval-check-output (identical under every numerics) are compared" >&2; \
		echo "--nbval-lax"; \
	fi

# Every notebook executed (into build/numerics-matrix/) under PyTorch kernel levels default/avx2/native,
# oneDNN and MKL modes and 1 or 2 threads; fails on any error, failed assertion, or a change in an
# output tagged nbval-check-output. TAG=1 re-derives those tags from the results.
numerics-matrix: $(STAMP) $(KERNEL)
	$(PY) tools/numerics_matrix.py $(if $(TAG),--tag) $(NOTEBOOKS)

sync: $(STAMP)
	$(VENV)/bin/jupytext --sync notebooks/[0-9][0-9]_*.py

# One notebook at a time by default, so the recorded run times are clean; EXECUTE_JOBS=2 halves the wait.
EXECUTE_JOBS ?= 1
execute: $(STAMP) $(KERNEL)
	$(PY) tools/execute.py --jobs $(EXECUTE_JOBS) $(NOTEBOOKS)

# Notebook 06 loads its 21 base models from data/checkpoints/06/ (their training is out of the
# notebook's run-time budget); this retrains them under the reference numerics, CKPT_JOBS at a time.
CKPT_JOBS ?= 2
checkpoints-06: $(STAMP)
	$(PY) tools/train_06_checkpoints.py --jobs $(CKPT_JOBS)

# HTMLFLAGS=--no-execute renders the notebooks as committed instead of executing them afresh.
# Sphinx + myst-nb + sphinx-book-theme (tools/site/); a broken link between notebooks fails the build.
# The English site goes to build/html/, the Chinese one (the catalogs of locale/zh_CN/) to build/html/zh_CN/;
# HTMLFLAGS=--language=en (or zh_CN) renders one alone.
html: $(STAMP)
	$(PY) tools/build_site.py $(HTMLFLAGS)

# The Chinese edition's catalogs (tools/i18n.py, docs/i18n.md): extract the English with Sphinx's gettext builder
# and merge it into locale/zh_CN/LC_MESSAGES/*.po with sphinx-intl (a changed paragraph turns fuzzy, a removed one
# is dropped); i18n-status counts what is left to translate per page; i18n-check lists every problem: the errors
# (a wrong translation: make test fails on them) and what is out of date (make test passes; the Chinese shows
# the English, marked), with exit status 1 while anything is listed.
i18n-update: $(STAMP)
	$(PY) -m tools.i18n update

i18n-status: $(STAMP)
	$(PY) -m tools.i18n status

i18n-check: $(STAMP)
	$(PY) -m tools.i18n check

# Solutions removed, exercise stubs kept with their outputs cleared: for handing out in class
# (build/student/, and the Chinese edition in build/student/zh/).
student: $(STAMP)
	$(PY) tools/student.py

# The browser check's own tests (tests/tools/test_check_site.py, hand-written pages), then what
# tests/tools/test_site.py does in `make test` with every page of both sites instead of a few, and the full report;
# CI runs it. Screenshots in build/site-check/ (the Chinese site's in build/site-check-zh/zh_CN/).
check-site: $(STAMP) chromium
	$(PY) -m pytest -n $(JOBS) --dist loadfile -m checksite tests/tools/test_check_site.py
	$(PY) tools/build_site.py --no-execute --out build/test-site
	@# the two sites in two browsers at once, one per core (each prints its report when it ends)
	$(PY) tools/check_site.py build/test-site --language en --shots build/site-check & en=$$!; \
	$(PY) tools/check_site.py build/test-site --language zh --shots build/site-check-zh; zh=$$?; \
	wait $$en && exit $$zh

# tools/lab.py: server rooted at notebooks/ (pairing: notebooks/jupytext.toml), no news pop-up
# (tools/lab/overrides.json), and POSENC_DETERMINISTIC unset, so progress bars are live.
# First the Chinese notebooks, notebooks/zh/, generated from the English ones and the catalogs
# (tools/i18n_notebooks.py; a notebook the reader changed is kept).
lab: $(STAMP) $(KERNEL)
	$(PY) -m tools.i18n_notebooks
	$(PY) tools/lab.py

# glibc serves large blocks (above an adaptive threshold that stops growing at 32 MB) straight from the OS
# and unmaps them when freed, so the next allocation page-faults fresh zeroed pages (~20 ms per 64 MB here):
# a method that allocates its output would be timed mostly on the kernel's page zeroing. These two settings
# keep freed memory in the process (as the jemalloc/tcmalloc allocators of PyTorch deployments do); they
# change no result, only how the allocator reuses memory.
# The benchmark runs two OpenMP threads (the issue's setting); the notebooks and tests use one.
bench: $(STAMP)
	env -u ATEN_CPU_CAPABILITY -u ONEDNN_MAX_CPU_ISA -u MKL_CBWR \
	OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 $(PY) bench/run.py

clean:
	rm -rf build .pytest_cache .hypothesis
	find . \( -path ./.venv -o -path ./.git \) -prune -o -name __pycache__ -prune -exec rm -rf {} +
