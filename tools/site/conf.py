"""Sphinx configuration of the course site (``make html``; see ``tools/build_site.py``).

The sources are staged by ``tools/build_site.py`` into ``build/site-src/`` (the executed notebooks,
the index and glossary pages); this folder holds the configuration, the project's extension
(``posenc_site.py``), the glossary data and the stylesheet.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

project = "posenc: how Transformers know word order"
author = "the posenc authors"
copyright = "the posenc authors, MIT License"
language = "en"
# The Chinese edition: gettext catalogs, locale/zh_CN/LC_MESSAGES/PAGE.po (tools/i18n.py, docs/i18n.md).
# tools/build_site.py renders the Chinese site with -D language=zh_CN and the copy of locale/ it stages
# beside the sources (-D locale_dirs=...), so that Sphinx compiles its .mo files there, not in locale/.
locale_dirs = [str(HERE.parent.parent / "locale")]
gettext_compact = False  # one catalog per page

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx.ext.autodoc", "sphinx.ext.napoleon",
              "sphinx_copybutton", "tools.site.posenc_site"]

# --- reading aids: a copy button on code (inputs and shell blocks, not outputs). Names of posenc_lib in
#     code cells link to the library reference (posenc_site.link_code_names; sphinx-codeautolink 0.19.0 cost
#     40% more render CPU time, linked fewer names and warned on notebook cells: docs/site.md's tooling table) ---
copybutton_selector = ("div.cell_input div.highlight pre, div.highlight-bash div.highlight pre, "
                       "div.highlight-python div.highlight pre, div.highlight-default div.highlight pre")
copybutton_exclude = ".linenos, .gp, .go"

# --- the library reference (api/, one page per module of posenc_lib; see tools/build_site.py) ---
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # torch.autograd.Function's own docstrings are not ours
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_search_scorer = str(HERE / "search_scorer.js")  # a notebook page ranks before the API pages
html_use_index = False  # the reference's own table lists the modules; the theme lays a long genindex out too wide
# Offline, so no intersphinx: references to the standard library's and other packages' types stay
# plain text. References into posenc_lib must resolve (posenc_site.resolve_short_name helps).
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|collections|numpy|pandas|matplotlib|pathlib|tqdm|typing|nbformat|abc|transformers)(\..*)?"),
    (r"py:class", r"(Tensor|Module|T|P|R|posenc_lib\..*\.[TPR])"),  # TypeVars
    (r"py:.*", r"(.*\.)?_\w+"),  # private names (a base class, a helper) are not documented
]
exclude_patterns = ["_extra", "**/_files", "_files", "_site.json", "_locale", "**.ipynb_checkpoints"]

# --- notebooks: rendered as executed (make html executes them first, with tools/execute.py) ---
nb_execution_mode = "off"
nb_custom_formats = {".ipynb": ["tools.site.posenc_site.read_notebook", {}, False]}
nb_merge_streams = True
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_dmath_double_inline = True  # $$...$$ inside a paragraph (as in 03) is display math, not raw text
myst_heading_anchors = 3  # `01_sinusoidal.ipynb#1--the-table` links resolve, and are checked

# Every missing reference is reported; tools/build_site.py runs Sphinx with warnings as errors,
# so a broken link between notebooks (or to an anchor that does not exist) fails the build.
nitpicky = True

# --- math, served from the site itself ---
html_static_path = ["_static", str(HERE.parent / "vendor")]  # vendor/mathjax -> _static/mathjax
mathjax_path = "mathjax/tex-chtml-full.js"  # relative: resolved against _static/
mathjax3_config = {"options": {"enableMenu": False}}  # the menu is what could fetch more components

# --- theme ---
html_theme = "sphinx_book_theme"
html_title = "posenc · positional encoding"
html_css_files = ["posenc.css"]
html_js_files = ["posenc.js"]
html_context = {"default_mode": "light"}  # empty, the theme logs "Got invalid theme mode"
templates_path = ["_templates"]
html_theme_options = {
    # the language switch (posenc_site.language_switch) before the theme's buttons, on every page
    "article_header_end": ["posenc-language.html", "article-header-buttons.html"],
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_source_button": False,
    "use_edit_page_button": False,
    "use_issues_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
}
html_show_sourcelink = True  # the download button offers the page's .ipynb
html_copy_source = True
html_show_search_summary = True  # from the page texts posenc_site.py writes (file:// forbids fetching pages)
html_last_updated_fmt = None
html_permalinks_icon = "#"
