"""Check a built site in a real browser: headless Chromium opens every page from ``file://``.

    python tools/check_site.py                       # check build/html, screenshots in build/site-check/
    python tools/check_site.py SITE --shots DIR      # another site / screenshot folder
    python tools/check_site.py --zh-pages index.html 03_rope.html   # only these pages of the Chinese site
    python tools/check_site.py --en-pages index.html 03_rope.html   # only these pages of the English site
    python tools/check_site.py --axe-all             # axe-core on every page, not only AXE_PAGES's

A build holds two sites (tools/build_site.py): the English one at its root and the Chinese one in
``zh_CN/``. Both get every check below, each in its own words (``TEXTS``: the Chinese site's solution
labels, its "Start here" paragraph). Driven by the Python ``playwright`` package against the system
Chromium (Debian's ``chromium``, ``/usr/bin/chromium``; ``make setup`` installs it, and a Chinese font,
when missing). For every page it checks:

- no request leaves the site (anything but ``file://`` inside the site folder is blocked and
  reported) and no request fails (a missing script, stylesheet, font or image);
- no console error and no uncaught exception;
- all math typeset: MathJax finished, no MathJax error box, and no raw ``$...$``, ``$$``, ``\\(``,
  ``\\[`` or ``\\begin{`` left in the visible text (code excluded);
- every image decoded (non-zero natural size) and given an alt text that is not a file name;
- every internal link resolves: the file exists and so does its ``#anchor``;
- solutions (cells tagged ``solution``) start closed, with their code hidden, name their exercise, and open on click;
- nothing is clipped at a 1280 or 1024 px window nor on a 390 px phone: an element whose content
  is wider than its box may only be one that scrolls (``overflow-x: auto|scroll``), and the page
  itself does not scroll sideways; on the two desktop widths, no code, output, table or formula
  scrolls sideways either (it wraps or fits: nothing is reachable only by scrolling);
- every figure is shown at half its natural width or more (its labels stay readable), and a click
  on a notebook's figure opens it at full size; on a 390 px phone every figure spans the page's
  width (without its scrollbar), in a fold or deep dive too, and no page scrolls sideways with its
  folds open (a display formula, table or code line wider than the screen scrolls in its own box:
  counted in the report);
- tables of results: no header row of pandas' index names alone, no number cell wrapped over two lines;
- one search box, and every fold (``<details>``) labelled; the front page (``index.html``) links
  to the first notebook under "Start here";
- in print (the print stylesheet): no navigation, every code block wrapped to the page, every fold
  open (solutions and deep dives print expanded), a link to the outside world followed by its URL,
  and an explorer's static figure in place of its drawing;
- every explorer (``posenc_course.explorers``, drawn by ``posenc_explorer.js``): its drawing
  replaces the static figure on screen, with text no smaller than 12 px at 1280 px; moving each
  control changes what is drawn; at three settings (the default, every control at its first option,
  every control at its last) every drawn series equals what ``posenc_lib`` computes for that setting
  in this process (``explorer_oracle``: the library's functions called directly, not the explorer's
  code), point for point, and its polyline follows its values; with scripts disabled the static
  figure shows and the empty drawing does not;

- the language switch (a link to the same page in the other language) shown at the top of the page,
  uncut, at 1280 px and on the phone;
- accessibility, on the pages of ``AXE_PAGES`` (every page with ``--axe-all``, and in ``check_site()`` by
  default): axe-core (Deque's engine, as the ``axe-playwright-python`` package ships it) finds no
  violation of the WCAG 2.1 level A and AA rules at 1280 px: the contrast of the text (outside code and
  formulas), the names of links, buttons and fold summaries, alt text, the page's language and title, links
  told apart from text by more than colour, scroll boxes reachable by keyboard, ARIA use (``AXE_RUNS``);

and, once for each site, that search (``search.html?q=...``, offline) finds a word of the prose
that appears on one notebook page only, and the Chinese glossary term 位置编码 on the glossary,
each result with a summary of its text and a label of its own (on the Chinese site: a Chinese word
of one notebook page, the course terms 旋转位置编码 and 外推 in their notebooks, 位置编码, and RoPE
first in 03); that following the switch from a notebook page at a section's ``#anchor`` lands on the
same page and anchor of the other language, and from the search page with the query; and, on the
Chinese site, that its Chinese text is drawn with a CJK font (not as missing-glyph boxes).
Every page of both sites, in subfolders too, is also read as a file: its ``<html lang>``, one switch
that points to the same page of the other site, which exists, and every section and glossary-term
anchor of an English page present on its Chinese page. A screenshot of the top of each page (1280 px
and phone) goes to ``--shots``. Exit status 1 and one line per problem when anything fails.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from tools.site.posenc_site import is_noise

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
NARROW_DESKTOP = {"width": 1024, "height": 768}
MIN_FIGURE_SCALE = 0.5  # below about half its natural width, a 150-dpi figure's 10-pt labels drop under 9 px
PHONE = {"width": 390, "height": 844}
TABLET = {"width": 768, "height": 1024}
ID_ATTR = re.compile(r"""\s(?:id|name)\s*=\s*["']([^"']+)["']""")
WORD = re.compile(r"[A-Za-z][A-Za-z-]{5,}[A-Za-z]")

# Runs in the page: everything measured from the DOM, returned as plain data.
PAGE_FACTS_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const skip = 'pre, code, script, style, textarea, mjx-container, mjx-assistive-mml, .highlight, noscript';
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const texts = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (!el.checkVisibility()) continue;
    texts.push(n.textContent);
  }
  const images = [...document.images].map(img => ({
    src: img.getAttribute('src'), alt: img.getAttribute('alt'),
    ok: img.complete && img.naturalWidth > 0,
  }));
  const links = [...document.querySelectorAll('a[href]:not(.posenc-language)')].map(a => a.href);  // the switch: check_languages
  const ids = [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.getAttribute('name'));
  return {
    text: texts.join(' '),
    math: document.querySelectorAll('mjx-container').length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    images, links, ids,
    title: document.title,
  };
}
"""

# Elements whose content is wider than their box and cannot scroll: that content is cut off.
CLIPPED_JS = r"""
() => {
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const hidden = 'mjx-assistive-mml';  // MathJax's copy for screen readers, clipped on purpose
  // How far the visible content of el reaches past its right edge (descendants' boxes; text too).
  const overhang = (el) => {
    const right = el.getBoundingClientRect().right;
    let reach = right;
    for (const child of el.querySelectorAll('*')) {
      if (child.closest(hidden)) continue;
      const r = child.getBoundingClientRect();
      if (r.width > 0) reach = Math.max(reach, r.right);
    }
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest(hidden)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) reach = Math.max(reach, r.right);
    }
    return reach - right;
  };
  const clipped = [];
  for (const el of main.querySelectorAll('*')) {
    if (el.closest(hidden)) continue;
    if (el.tagName !== 'MJX-CONTAINER' && el.parentElement && el.parentElement.closest('mjx-container')) continue;  // MathJax's own glyph boxes
    if (el.clientWidth === 0 || !el.checkVisibility()) continue;
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const ox = getComputedStyle(el).overflowX;
    if (ox !== 'hidden' && ox !== 'clip') continue;
    const cut = overhang(el);
    if (cut <= 4) continue;
    const label = el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
      ? '.' + el.className.trim().split(/\s+/).join('.') : '');
    const snippet = (el.textContent || '').trim().slice(0, 60).replace(/\s+/g, ' ');
    clipped.push(`${label} (${Math.round(cut)} px cut off): ${snippet}`);
  }
  // the page's width without the scrollbar beside it (shown, as on Windows): a page 1 px wider scrolls
  const page = document.documentElement;
  const sideways = page.scrollWidth > page.clientWidth + 1 ? page.scrollWidth - page.clientWidth : 0;
  return {clipped, sideways};
}
"""

# Desktop layout: what scrolls sideways, figures drawn too small, result tables, folds, search boxes.
LAYOUT_JS = r"""
(startHere) => {
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const text = (el) => (el.textContent || '').trim().slice(0, 50).replace(/\s+/g, ' ');
  const scrolling = [];
  for (const el of main.querySelectorAll('pre, div.cell_output, div.cell_output .output, table, div.math, mjx-container[display="true"]')) {
    if (!el.checkVisibility() || el.clientWidth === 0) continue;
    if (el.tagName === 'PRE' && el.closest('div.highlight') && !el.closest('div.cell_output')) continue;  // code: CODE_JS
    if (el.scrollWidth > el.clientWidth + 1 && !el.parentElement.closest('pre, table, div.math, mjx-container')) {
      scrolling.push(`${el.tagName.toLowerCase()} (${el.scrollWidth - el.clientWidth} px more): ${text(el.querySelector('thead') || el)}`);
    }
  }
  const small = [];
  for (const img of main.querySelectorAll('img')) {
    if (!img.checkVisibility() || !img.naturalWidth) continue;
    const scale = img.getBoundingClientRect().width / img.naturalWidth;
    if (scale < MIN_SCALE) small.push(`${img.getAttribute('src')} at ${Math.round(100 * scale)}% of its width`);
  }
  const tables = [];
  for (const table of main.querySelectorAll('table.dataframe')) {
    for (const row of table.querySelectorAll('thead tr')) {
      const cells = [...row.children];
      const empty = cells.filter(c => !c.textContent.trim()).length;
      if (empty > cells.length - empty) tables.push(`a header row of index names alone: ${text(row)}`);
    }
    for (const cell of table.querySelectorAll('td.posenc-number')) {
      const range = document.createRange();
      range.selectNodeContents(cell);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) { tables.push(`a cell wrapped over ${lines.size} lines: ${text(cell)}`); break; }
    }
  }
  const unlabelled = [...main.querySelectorAll('details')].filter(d => !(d.querySelector('summary')?.textContent.trim()))
    .map(d => text(d) || '(empty)');
  const searches = [...document.querySelectorAll('.search-button-field, .search-button, form.bd-search input')]
    .filter(el => el.checkVisibility()).length;
  const figure = main.querySelector('div.cell_output img');
  const start = [...main.querySelectorAll('p, li')].find(el => new RegExp(startHere).test(el.textContent));
  return {scrolling, small, tables, unlabelled, searches, enlargeable: !!figure,
          startLink: start ? [...start.querySelectorAll('a[href]')].map(a => a.getAttribute('href')) : null};
}
""".replace("MIN_SCALE", str(MIN_FIGURE_SCALE))

# A click on the first figure of a notebook: it opens full size (posenc.js), and a click closes it.
ENLARGE_JS = r"""
async () => {
  const img = document.querySelector('div.cell_output img');
  const link = img.closest('a.posenc-enlarge');
  if (!link) return 'a figure is not a link that opens it full size';
  link.click();
  await new Promise(r => setTimeout(r, 50));
  const dialog = document.querySelector('dialog[open]');
  const big = dialog && dialog.querySelector('img');
  if (!big) return 'a click on a figure opens nothing';
  const width = big.getBoundingClientRect().width;
  dialog.click();
  await new Promise(r => setTimeout(r, 50));
  if (width < 0.99 * img.naturalWidth) return `a click on a figure shows it at ${Math.round(width)} of its ${img.naturalWidth} px`;
  if (document.querySelector('dialog[open]')) return 'the full-size figure does not close on a click';
  return null;
}
"""

SOLUTIONS_JS = r"""
async (exercise) => {
  const cells = [...document.querySelectorAll('div.cell.tag_solution')];
  const out = [];
  for (const [i, cell] of cells.entries()) {
    const details = cell.querySelector('details');
    const code = cell.querySelector('.cell_input');
    if (!details || !code) { out.push(`solution ${i + 1}: not folded (no <details> around its code)`); continue; }
    const label = details.querySelector('summary')?.textContent.trim() ?? '';
    if (!new RegExp(exercise, 'i').test(label)) out.push(`solution ${i + 1}: its fold does not name the exercise ("${label}")`);
    if (details.open || code.checkVisibility()) { out.push(`solution ${i + 1}: open before any click`); continue; }
    details.querySelector('summary').click();
    await new Promise(r => setTimeout(r, 50));
    if (!details.open || !code.checkVisibility()) out.push(`solution ${i + 1}: does not open on click`);
    details.open = false;  // closed again, as a reader who prints the page finds it
  }
  return {count: cells.length, problems: out};
}
"""

# In print: no navigation shown, no code block wider than the page (it must wrap, as paper cannot scroll).
PRINT_JS = r"""
() => {
  const problems = [];
  for (const el of document.querySelectorAll('.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .prev-next-area')) {
    if (el.checkVisibility()) problems.push(`navigation printed: ${el.className.split(' ')[0]}`);
  }
  const main = document.querySelector('main, article, .bd-article') || document.body;
  for (const pre of main.querySelectorAll('pre')) {
    if (pre.checkVisibility() && pre.scrollWidth > pre.clientWidth + 1) {
      problems.push(`code not wrapped in print: ${(pre.textContent || '').trim().slice(0, 50)}`);
    }
  }
  for (const fold of main.querySelectorAll('details:not([open])')) {
    problems.push(`a fold prints closed: ${(fold.querySelector('summary')?.textContent || '').trim().slice(0, 50)}`);
  }
  for (const a of main.querySelectorAll('a.reference.external[href^="http"]')) {
    if (!getComputedStyle(a, '::after').content.includes(a.getAttribute('href'))) {
      problems.push(`a link prints without its URL: ${a.getAttribute('href')}`);
      break;
    }
  }
  return problems;
}
"""
# Explorers in print: the drawing hidden, the notebook's static figure (default setting) shown.
PRINT_EXPLORERS_JS = r"""
() => [...document.querySelectorAll('div.posenc-explorer')].flatMap(c => {
  const img = c.closest('div.cell_output')?.querySelector('img');
  return [...(c.checkVisibility() ? [`explorer ${c.dataset.explorer}: its drawing prints`] : []),
          ...(img && img.checkVisibility() ? [] : [`explorer ${c.dataset.explorer}: its static figure does not print`])];
})
"""
# Inline formulas, with the browser's scrollbars shown (as on Windows and most Linux desktops): none may
# be a scroll box showing a scrollbar, and none may cut its glyphs.
INLINE_MATH_JS = r"""
() => {
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const found = [...main.querySelectorAll('span.math, mjx-container:not([display="true"])')]
    .filter(el => !el.closest('div.math, mjx-container[display="true"]') && el.checkVisibility() && el.clientWidth > 0);
  const problems = [];
  for (const el of found) {
    const style = getComputedStyle(el);
    const bar = el.offsetHeight - el.clientHeight - parseFloat(style.borderTopWidth) - parseFloat(style.borderBottomWidth);
    const cut = el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible';
    // a formula wider than its line (posenc-wide-math) scrolls on purpose: allowed when it is
    if (el.classList.contains('posenc-wide-math') && el.scrollWidth > el.clientWidth + 20) continue;
    if (bar > 1 || cut) {
      const tex = (el.querySelector('mjx-assistive-mml')?.textContent || el.textContent || '').trim().slice(0, 40);
      problems.push(`${bar > 1 ? `a ${Math.round(bar)} px scrollbar` : ''}${bar > 1 && cut ? ' and ' : ''}${cut ? `${el.scrollWidth - el.clientWidth} px cut off` : ''}: ${tex}`);
    }
  }
  return {count: found.filter(el => el.tagName === 'MJX-CONTAINER').length, problems};
}
"""
# Code cells and code blocks (not outputs): the column holds MIN_CODE_COLUMNS characters; no line wraps
# (a continuation line would restart at column 0); a line longer than the column scrolls in its box.
CODE_JS = r"""
() => {
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const problems = [];
  let lines = 0, blocks = 0, capacity = Infinity;
  const probe = document.createElement('span');
  for (const pre of main.querySelectorAll('div.highlight pre')) {
    if (pre.closest('div.cell_output') || !pre.checkVisibility() || pre.clientWidth === 0) continue;
    const style = getComputedStyle(pre);
    probe.textContent = 'x'.repeat(100);
    pre.appendChild(probe);
    const charWidth = probe.getBoundingClientRect().width / 100;
    probe.remove();
    const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const fits = Math.floor(inner / charWidth + 0.01);
    capacity = Math.min(capacity, fits);
    const text = pre.textContent.replace(/\n$/, '');
    const rows = text.split('\n');
    blocks += 1; lines += rows.length;
    const range = document.createRange();
    range.selectNodeContents(pre);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    const label = (rows.find(r => r.trim()) || '').trim().slice(0, 50);
    if (tops.size > rows.length) problems.push(`code wraps: ${tops.size} screen lines for ${rows.length} lines: ${label}`);
    const longest = Math.max(...rows.map(r => r.length));
    if (fits < MIN_COLUMNS) problems.push(`the code column holds ${fits} characters, under ${MIN_COLUMNS}: ${label}`);
    else if (longest > fits && !['auto', 'scroll'].includes(style.overflowX)) problems.push(`a ${longest}-character line is cut off: ${label}`);
  }
  return {blocks, lines, capacity: capacity === Infinity ? null : capacity, problems};
}
"""
MIN_CODE_COLUMNS = 80  # docs/style.md: lessons keep code within 80 columns
CODE_JS = CODE_JS.replace("MIN_COLUMNS", str(MIN_CODE_COLUMNS))

# Phones and tablets: the visible ☰ (site navigation) and contents buttons, tapped where they are drawn
# (one drawn off screen is scrolled to first). `header`: the page has the theme's header (the site's
# pages do), where the ☰ button must be.
TOGGLES_JS = r"""
() => ['primary', 'secondary'].map(kind => {
  const drawn = (b) => { const r = b.getBoundingClientRect(); return b.checkVisibility() && r.width > 0 && r.height > 0; };
  const onScreen = (b) => { const r = b.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; };
  const buttons = [...document.querySelectorAll(`.${kind}-toggle`)].filter(drawn);
  const button = buttons.find(onScreen) || buttons[0];
  if (!button) return {kind, found: false, header: !!document.querySelector('.bd-header, .bd-header-article')};
  if (!onScreen(button)) button.scrollIntoView({block: 'center'});
  const r = button.getBoundingClientRect();
  return {kind, found: true, x: r.left + r.width / 2, y: r.top + r.height / 2};
})
"""
# The drawer of `kind` is open: its dialog is open and shows its links on screen.
DRAWER_OPEN_JS = r"""
(kind) => {
  const dialog = document.getElementById(`pst-${kind}-sidebar-modal`);
  const sidebar = document.getElementById(`pst-${kind}-sidebar`);
  const shown = (el) => { if (!el || !el.checkVisibility()) return false;
    const r = el.getBoundingClientRect(); return r.width > 0 && r.right > 0 && r.left < innerWidth; };
  const links = dialog && dialog.open ? [...dialog.querySelectorAll('a[href]')].filter(shown).length : 0;
  return {open: !!(dialog && dialog.open), links, inline: shown(sidebar) && [...sidebar.querySelectorAll('a[href]')].some(shown)};
}
"""
# Outputs' text lines, for the lines a page must not show (posenc_site.is_noise).
OUTPUT_LINES_JS = r"""
() => [...document.querySelectorAll('div.cell_output pre')].flatMap(pre => pre.textContent.split('\n'))
"""
# Phones: figures as wide as the page (its width without a scrollbar), in deep dives too; the top of the
# front page's "Start here" within the first screen; what scrolls in its own box (display formulas,
# tables, code: counted for the report, not a fault).
PHONE_JS = r"""
async (startHere) => {
  const main = document.querySelector('main, article, .bd-article') || document.body;
  const narrow = [];
  const page = document.documentElement.clientWidth;
  const folds = [...main.querySelectorAll('details:not([open])')];
  folds.forEach(d => { d.open = true; });
  await new Promise(r => setTimeout(r, 50));  // each fold's toggle event, on which posenc.js lays out its figures
  for (const img of main.querySelectorAll('div.cell_output img')) {
    if (!img.checkVisibility() || !img.naturalWidth) continue;
    const width = img.getBoundingClientRect().width;
    if (width < Math.min(img.naturalWidth, page - 2)) narrow.push(`${img.getAttribute('src')} at ${Math.round(width)} px of a ${page} px page`);
  }
  const boxes = {formulas: 0, tables: 0, code: 0};
  const scrolls = (el) => el.checkVisibility() && el.scrollWidth > el.clientWidth + 1;
  boxes.formulas = [...main.querySelectorAll('mjx-container[display="true"], span.math.posenc-wide-math')].filter(scrolls).length;
  boxes.tables = [...main.querySelectorAll('table')].filter(t => { for (let a = t.parentElement; a && a !== main; a = a.parentElement) {
    if (scrolls(a)) return true; } return false; }).length;
  boxes.code = [...main.querySelectorAll('div.highlight pre')].filter(scrolls).length;
  const root = document.documentElement;
  const sideways = root.scrollWidth > root.clientWidth + 1 ? root.scrollWidth - root.clientWidth : 0;  // folds open
  folds.forEach(d => { d.open = false; });
  const start = [...main.querySelectorAll('p, li')].find(el => new RegExp(startHere).test(el.textContent));
  return {narrow, boxes, sideways, startTop: start ? start.getBoundingClientRect().top + scrollY : null};
}
"""
# Print: the label a solution fold shows on paper.
PRINT_LABELS_JS = r"""
() => [...document.querySelectorAll('div.cell details.hide > summary')].map(s =>
  [...s.children].filter(p => p.checkVisibility()).map(p => p.textContent.trim()).join(' | '))
"""
# The first line of code of each solution, which the printed PDF must show as pixels.
SOLUTION_CODE_JS = r"""
() => [...document.querySelectorAll('div.cell.tag_solution div.cell_input pre')]
  .map(pre => (pre.textContent.split('\n').find(line => line.trim().length >= 12) || '').trim().slice(0, 40))
"""
MIN_PHONE_EXPLORER_TEXT_PX = 11

# What the checks look for in the words of each language's pages. The Chinese site's own words come from
# posenc_site.UI; the "Start here" paragraph is translated in the catalogs, and an entry not translated
# yet shows in English, so the English is accepted there too.
TEXTS = {
    "en": {"start": r"^\s*Start here", "exercise": r"exercise \d+", "print_label": r"Solution to exercise \d+",
           "print_label_text": "Solution to exercise N"},
    "zh": {"start": r"^\s*(Start here|从这里开始)", "exercise": r"练习 ?\d+", "print_label": r"练习 \d+ 的答案",
           "print_label_text": "练习 N 的答案"},
}
# The two sites of a build (tools/build_site.py LANGUAGES): English at the root, Chinese in zh_CN/.
ZH_FOLDER = "zh_CN"

# The language switch of the page: where it points, and whether it is drawn on screen, uncut.
SWITCH_JS = r"""
() => [...document.querySelectorAll('a.posenc-language')].map(a => {
  const r = a.getBoundingClientRect();
  return {href: a.href, text: a.textContent.trim(), shown: a.checkVisibility() && r.width > 0 && r.height > 0
          && r.left >= 0 && r.right <= document.documentElement.clientWidth + 1 && r.top >= 0};
})
"""
# The Chinese site's text is drawn with a CJK font: four different characters in the font of a paragraph
# of Chinese text, drawn on a canvas, give four different images. Without a font that has them, every
# character is the same missing-glyph box (or nothing), and the images are all alike.
CJK_FONT_JS = r"""
async () => {
  await document.fonts.ready;
  const el = [...document.querySelectorAll('article h1, article p, article li')].find(e => /[\u4e00-\u9fff]{4}/.test(e.textContent));
  if (!el) return {found: false};
  el.setAttribute('data-posenc-cjk', '');
  const style = getComputedStyle(el);
  const canvas = document.createElement('canvas');
  canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const drawn = [...'位置编码'].map(ch => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.font = `32px ${style.fontFamily}`;
    ctx.fillText(ch, 4, 36);
    return ctx.getImageData(0, 0, 48, 48).data.join(',');
  });
  return {found: true, family: style.fontFamily, distinct: new Set(drawn).size,
          inked: drawn.filter(d => /[1-9]/.test(d)).length, text: el.textContent.trim().slice(0, 30)};
}
"""

# Media-query listeners (posenc.js opens the folds on the print query) run at the next rendering frame.
NEXT_FRAME_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))"

RAW_TEX = [
    (re.compile(r"\$\$"), "$$"),
    (re.compile(r"\$(?!\s)[^$\n]{1,200}(?<!\s)\$"), "$...$"),
    (re.compile(r"\\\(|\\\)|\\\[|\\\]"), "\\( or \\["),
    (re.compile(r"\\begin\{"), "\\begin{"),
]


# --- explorers ------------------------------------------------------------------------------------

# The state of every explorer on the page: its spec's controls and params, what is shown, text sizes.
EXPLORER_FACTS_JS = r"""
() => [...document.querySelectorAll('div.posenc-explorer')].map(c => {
  const spec = (window.POSENC_EXPLORERS || {})[c.dataset.explorer];
  const svg = c.querySelector('svg');
  const img = c.closest('div.cell_output')?.querySelector('img');
  const scale = svg ? svg.getBoundingClientRect().width / svg.viewBox.baseVal.width : 0;
  const sizes = svg ? [...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale) : [];
  return {name: c.dataset.explorer, built: !!(spec && svg && c.checkVisibility()),
          controls: spec ? spec.controls.map(k => ({name: k.name, count: k.options.length, default: k.default,
                                                     options: k.options})) : [],
          params: spec ? spec.params : null, inputs: c.querySelectorAll('input, select').length,
          staticShown: !!img && img.checkVisibility(), hasStatic: !!img,
          smallest: sizes.length ? Math.min(...sizes) : 0};
})
"""
# Move control `name` of explorer `i` to option `index`, as a reader does (an input event).
SET_CONTROL_JS = r"""
([i, name, index]) => {
  const input = document.querySelectorAll('div.posenc-explorer')[i].querySelector(`[name="${name}"]`);
  input.value = String(index);
  input.dispatchEvent(new Event('input', {bubbles: true}));
}
"""
# What explorer `i` draws: each series' keys, arrays and polylines (pixel points).
DRAWN_JS = r"""
(i) => [...document.querySelectorAll('div.posenc-explorer')[i].querySelectorAll('g.posenc-series')].map(g => ({
  kind: g.dataset.kind, xkey: g.dataset.xkey ?? null, ykey: g.dataset.ykey ?? null,
  x: g.dataset.x ? JSON.parse(g.dataset.x) : null, y: g.dataset.y ? JSON.parse(g.dataset.y) : null,
  row: g.dataset.row === undefined ? null : Number(g.dataset.row), html: g.outerHTML,
  lines: [...g.querySelectorAll(':scope > polyline')].map(p => p.getAttribute('points').trim().split(/\s+/)
    .map(xy => xy.split(',').map(Number))),
}))
"""
MIN_EXPLORER_TEXT_PX = 12  # the code's size on the site (0.8 rem): a footnote's
EXPLORER_TOLERANCE = {"rtol": 1e-3, "atol": 1e-6}  # the site keeps 4 significant digits


def explorer_oracle(name: str, params: dict, state: dict) -> dict:
    """What explorer ``name`` must draw at ``state``, computed from ``posenc_lib`` directly: the
    library's own functions (and another path where it has one: complex RoPE, the ALiBi scheme's
    bias, cosine similarity), not the explorer's code. Keys are the value keys the drawing names."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies, sinusoidal_table
    from posenc_lib.rotary.rope import rope_inv_freq
    from posenc_lib.rotary.scaling import rope_frequencies
    from posenc_lib.score_bias.alibi import ALiBi, alibi_slopes
    from posenc_lib.score_bias.t5 import t5_relative_bucket

    if name == "sinusoidal":
        d, n, p, base = params["d_model"], params["n_positions"], state["position"], state["base"]
        table = sinusoidal_table(n, d, base=base, dtype=torch.float64)
        return {"pair": np.arange(d // 2), "sine": table[p, 0::2], "cosine": table[p, 1::2],
                "position": np.arange(n), "similarity": F.cosine_similarity(table, table[p][None], dim=-1),
                "marker": [p], "wavelength": 2 * np.pi / sinusoidal_frequencies(d, base), "shown": [n]}
    if name == "rope":
        m, k_at, n = state["query_position"], state["key_position"], params["n_positions"]
        q, k = torch.tensor(params["query"], dtype=torch.float64), torch.tensor(params["key"], dtype=torch.float64)
        inv_freq = rope_inv_freq(q.numel(), params["base"]).double()

        def turned(x, positions):  # Meta's complex form: pairs (x[2i], x[2i+1]) times e^(j m theta_i)
            angles = positions.double()[:, None] * inv_freq
            z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
            return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2)

        keys = turned(k.expand(n, -1), torch.arange(n))  # (n, head_dim)
        query = turned(q[None], torch.tensor([m]))[0]
        scores = keys @ query
        return {"q_rotated": query.reshape(-1, 2), "k_rotated": keys[k_at].reshape(-1, 2),
                "offset": np.arange(n) - m, "score": scores, "marker_offset": [k_at - m], "marker_score": [scores[k_at]]}
    if name == "relative":
        heads, length = state["n_heads"], state["length"]
        offsets = torch.arange(-(length - 1), length)
        keys = np.round(np.linspace(0, length - 1, min(params["n_keys"], length))).astype(np.int64)
        bias = ALiBi(heads, causal=False).score_bias(torch.tensor([[length - 1]]), torch.tensor(keys)[None])
        far = params["max_distance"]
        return {"offset": offsets, "t5_bidirectional": t5_relative_bucket(offsets, True, params["num_buckets"], far),
                "t5_causal": t5_relative_bucket(offsets, False, params["num_buckets"], far),
                "max_distance": [d for d in (-far, far) if abs(d) < length], "head": np.arange(1, heads + 1),
                "slope": alibi_slopes(heads), "key": keys, "alibi_bias": bias[0, :, 0, :]}
    if name == "context":
        method, s = state["method"], state["factor"]
        head_dim, base, trained = params["head_dim"], params["base"], params["original_length"]
        extra = {"original_max_position_embeddings": trained}
        config, seq_len = {"linear": ({"factor": s}, None), "ntk": ({"factor": s}, None),
                           "dynamic": ({"factor": 1.0, **extra}, round(s * trained)),
                           "yarn": ({"factor": s, **extra}, None),
                           "llama3": ({"factor": s, "low_freq_factor": 1.0, "high_freq_factor": 4.0, **extra}, None)}[method]
        scaled = rope_frequencies(head_dim, {"rope_type": method, "rope_theta": base, **config}, seq_len)[0].double()
        plain = rope_inv_freq(head_dim, base).double()
        return {"pair": np.arange(head_dim // 2), "wavelength": 2 * np.pi / plain, "scaled_wavelength": 2 * np.pi / scaled,
                "ratio": scaled / plain, "trained": [trained], "target": [s * trained]}
    raise ValueError(f"no oracle for the explorer {name!r}")


def _as_array(value) -> "np.ndarray":
    import numpy as np
    import torch

    return value.double().numpy() if isinstance(value, torch.Tensor) else np.asarray(value, dtype=float)


def _compare_drawn(drawn: list[dict], expected: dict, where: str) -> list[str]:
    """Each drawn series against the oracle (every array it drew), and every oracle key drawn somewhere."""
    import numpy as np

    problems, seen = [], set()
    for series in drawn:
        for axis in ("x", "y"):
            key = series[f"{axis}key"]
            if key is None:
                continue
            seen.add(key)
            if key not in expected:
                problems.append(f"{where}: draws {key!r}, which the library check does not know")
                continue
            want = _as_array(expected[key])
            if series["kind"] == "arrow" and axis == "y":
                want = want[series["row"]]
            got = np.asarray(series[axis] if series["kind"] != "arrow" else series[axis][series["row"]], dtype=float)
            if got.shape != want.shape or not np.allclose(got, want, **EXPLORER_TOLERANCE):
                problems.append(f"{where}: {key!r} drawn {_short(got)} but posenc_lib gives {_short(want)}")
        problems += _follows_values(series, where)
    problems += [f"{where}: {key!r} is not drawn" for key in sorted(expected.keys() - seen)]
    return problems


def _short(values) -> str:
    import numpy as np

    flat = np.asarray(values, dtype=float).ravel()
    return f"{np.array2string(flat[:4], precision=4)}{'...' if flat.size > 4 else ''} (shape {np.shape(values)})"


def _follows_values(series: dict, where: str) -> list[str]:
    """A drawn line's polyline has a point per value and runs up, down, left and right as its values do."""
    import numpy as np

    if series["kind"] not in ("line", "lines"):
        return []
    rows = series["y"] if series["kind"] == "lines" else [series["y"]]
    if len(series["lines"]) != len(rows):
        return [f"{where}: {series['ykey']!r}: {len(series['lines'])} polylines for {len(rows)} rows of values"]
    for points, ys in zip(series["lines"], rows):
        px, py = np.asarray(points, dtype=float).T if points else (np.array([]), np.array([]))
        x, y = np.asarray(series["x"], dtype=float), np.asarray(ys, dtype=float)
        if len(px) != len(x):
            return [f"{where}: {series['ykey']!r}: {len(px)} points drawn for {len(x)} values"]
        for values, pixels, sign, axis in ((x, px, 1, "x"), (y, py, -1, "y")):  # SVG y grows downwards
            step = np.diff(values)
            big = np.abs(step) > 1e-2 * (np.ptp(values) or 1)
            if np.any(np.sign(np.diff(pixels)[big]) != sign * np.sign(step[big])):
                return [f"{where}: {series['ykey']!r}: the polyline does not follow its {axis} values"]
    return []


def check_explorers(page, name: str, report: Report) -> int:
    """The explorers of the current page (see the module docstring); returns how many there are.

    An explorer inside a deep dive (a fold, closed on load) is checked with its fold opened, as a
    reader who opens it sees it."""
    page.evaluate("() => document.querySelectorAll('details.deep-dive').forEach(d => { d.open = true; })")
    facts = page.evaluate(EXPLORER_FACTS_JS)
    for i, explorer in enumerate(facts):
        where = f"explorer {explorer['name']}"
        if not explorer["built"]:
            report.add(name, f"{where}: not drawn (no data for it, or its script did not run)")
            continue
        if explorer["staticShown"] or not explorer["hasStatic"]:
            report.add(name, f"{where}: the static figure {'shows beside' if explorer['hasStatic'] else 'is missing under'} "
                             "the drawing on screen")
        if explorer["inputs"] != len(explorer["controls"]):
            report.add(name, f"{where}: {explorer['inputs']} inputs for {len(explorer['controls'])} controls")
        if explorer["smallest"] < MIN_EXPLORER_TEXT_PX:
            report.add(name, f"{where}: text drawn at {explorer['smallest']:.1f} px, under {MIN_EXPLORER_TEXT_PX} px")
        controls = explorer["controls"]

        def drawn() -> list[dict]:
            return page.evaluate(DRAWN_JS, i)

        def set_all(choose) -> dict:
            for c in controls:
                page.evaluate(SET_CONTROL_JS, [i, c["name"], choose(c)])
            return {c["name"]: c["options"][choose(c)] for c in controls}

        set_all(lambda c: c["default"])
        before = [s["html"] for s in drawn()]
        for c in controls:
            other = c["count"] - 1 if c["default"] != c["count"] - 1 else 0
            page.evaluate(SET_CONTROL_JS, [i, c["name"], other])
            if [s["html"] for s in drawn()] == before:
                report.add(name, f"{where}: moving {c['name']!r} to option {other} changes nothing drawn")
            page.evaluate(SET_CONTROL_JS, [i, c["name"], c["default"]])
        for label, choose in (("default", lambda c: c["default"]), ("first options", lambda c: 0),
                              ("last options", lambda c: c["count"] - 1)):
            state = set_all(choose)
            expected = explorer_oracle(explorer["name"], explorer["params"], state)
            for problem in _compare_drawn(drawn(), expected, f"{where} at its {label} {state}"):
                report.add(name, problem)
        set_all(lambda c: c["default"])
    return len(facts)


def check_explorers_without_scripts(pw, pages: list[tuple[Path, str]], report: Report) -> None:
    """With scripts disabled, each explorer's static figure shows and its (empty) drawing does not
    (``pages``: each page's file and its name in the report)."""
    browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
    try:
        context = browser.new_context(java_script_enabled=False, viewport=DESKTOP)
        context.route(re.compile(r"^(https?|wss?|ftp):"), lambda route: route.abort())
        page = context.new_page()
        for path, name in pages:
            page.goto(path.as_uri(), wait_until="load")
            for problem in page.evaluate(r"""
                () => [...document.querySelectorAll('details.deep-dive')].forEach(d => { d.open = true; })
                  || [...document.querySelectorAll('div.posenc-explorer')].flatMap(c => {
                  const img = c.closest('div.cell_output')?.querySelector('img');
                  return [...(c.checkVisibility() ? ['its drawing shows'] : []),
                          ...(img && img.checkVisibility() ? [] : ['its static figure does not show'])]
                    .map(p => `explorer ${c.dataset.explorer} without scripts: ${p}`);
                })"""):
                report.add(name, problem)
    finally:
        browser.close()


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    pages: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0
    axe_seconds: float = 0.0  # of ``seconds``, in axe-core (check_accessibility)
    languages: dict[str, int] = field(default_factory=dict)  # pages per language checked as files (check_languages)

    def add(self, page: str, message: str) -> None:
        self.problems.append(f"{page}: {message}")


def _inside(url: str, site: Path) -> Path | None:
    """The file a ``file://`` URL points at, when it lies inside ``site``; else None."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path)).resolve()
    return path if path == site or site in path.parents else None


def _ids_of(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    if path not in cache:
        cache[path] = set(ID_ATTR.findall(path.read_text(encoding="utf-8", errors="replace")))
    return cache[path]


def check_clipping(page, name: str, where: str, report: Report) -> None:
    """Report code or math cut off in the current viewport, and a page that scrolls sideways."""
    clip = page.evaluate(CLIPPED_JS)
    for item in clip["clipped"]:
        report.add(name, f"clipped {where}: {item}")
    if clip["sideways"]:
        report.add(name, f"page scrolls sideways {where} by {clip['sideways']} px")


def check_layout(page, name: str, where: str, report: Report, index: bool, start: str = TEXTS["en"]["start"]) -> dict:
    """The desktop-layout checks of LAYOUT_JS (and the front page's start link, in a paragraph that
    matches ``start``), at the current width."""
    facts = page.evaluate(LAYOUT_JS, start)
    for item in facts["scrolling"]:
        report.add(name, f"scrolls sideways {where} (reachable only by scrolling): {item}")
    for item in facts["small"]:
        report.add(name, f"figure shown too small to read {where}: {item}")
    for item in dict.fromkeys(facts["tables"]):
        report.add(name, f"table {where}: {item}")
    for item in facts["unlabelled"]:
        report.add(name, f"a fold without a label: {item}")
    if facts["searches"] > 1 and not name.endswith("search.html"):  # the search page's own form is the second
        report.add(name, f"{facts['searches']} search boxes visible {where}")
    if index and not any(re.match(r"(\./)?00_[^/]*\.html", href) for href in facts["startLink"] or []):
        report.add(name, 'the front page has no "Start here" link to the first notebook (00_*.html)')
    return facts


# axe-core's rules for WCAG 2.0 and 2.1, levels A and AA (its "best-practice" rules are advice, not criteria), in two
# runs: every rule but text contrast on the whole page, then text contrast on the page's words outside code and
# formulas. Contrast over every highlighted code token and MathJax glyph took 18 s of CPU time on 03 alone (against
# 6 s for the words): the code's colours are accessible-pygments' WCAG AA palettes (the theme's), and a formula is
# drawn in the colour of its text. No preloading: axe would fetch each stylesheet again with XMLHttpRequest, which a
# page opened from file:// may not do (a console error and a failed request on every page); the one rule that reads
# stylesheets (css-orientation-lock) then reports nothing.
AXE_TAGS = {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}
# The pages ``make check-site`` runs axe-core on (``--axe-all``: every page). On every page of both sites it took 285 s
# of a 628 s browser check (2026-12-07, 2 cores shared with other work), 3.8-28.9 s a notebook page: more than CI can give
# it. The theme's frame (header, sidebars, buttons, search box, language switch) is the same markup on every page and
# the lesson's content is written by the same extension; these pages hold every kind of it: the front page, 03 (every
# kind of content a lesson has: formulas inline and displayed, a table of results, figures, solutions, a deep dive, an
# explorer), the glossary, search, and the instructor guide (a formula wider than its line: the scroll box axe first
# faulted); in Chinese, the front page and 03 (the Chinese UI's words and fonts). The checks written for
# every page (alt text, folds labelled) still run on every page.
AXE_PAGES = {"en": {"index.html", "03_rope.html", "glossary.html", "search.html", "instructor-guide.html"},
             "zh": {"index.html", "03_rope.html"}}
AXE_RUNS = [
    (None, {"runOnly": AXE_TAGS, "rules": {"color-contrast": {"enabled": False}}, "preload": False}),
    ({"include": [[tag] for tag in ("p", "li", "h1", "h2", "h3", "h4", "dt", "dd", "th", "td", "summary", "label",
                                    "nav", "header", "footer")]},
     {"runOnly": {"type": "rule", "values": ["color-contrast"]}, "preload": False}),
]


def check_accessibility(page, name: str, report: Report) -> int:
    """axe-core on the current page (``AXE_RUNS``): one problem per rule violated, naming its first elements.
    Returns how many rules were violated."""
    from axe_playwright_python.sync_playwright import Axe

    axe, found = Axe(), 0
    for context, options in AXE_RUNS:
        for rule in axe.run(page, context=context, options={**options, "resultTypes": ["violations"]}).response["violations"]:
            found += 1
            where = [" ".join(map(str, node["target"])) for node in rule["nodes"]]
            report.add(name, f"accessibility ({rule['id']}): {rule['help']}: {', '.join(where[:3])}"
                             + (f" and {len(where) - 3} more" if len(where) > 3 else ""))
    return found


def index_page(name: str) -> bool:
    return name.split("/")[-1] == "index.html"


def check_inline_math(page, name: str, where: str, report: Report) -> int:
    """Inline formulas with scrollbars shown: no scrollbar, no glyph cut off. Returns how many were checked."""
    facts = page.evaluate(INLINE_MATH_JS)
    for item in facts["problems"]:
        report.add(name, f"inline formula {where} with {item}")
    return facts["count"]


def check_code(page, name: str, where: str, report: Report) -> dict:
    """Code blocks: no line wraps, the column holds MIN_CODE_COLUMNS characters, a longer line scrolls."""
    facts = page.evaluate(CODE_JS)
    for item in facts["problems"]:
        report.add(name, f"{where}: {item}")
    return facts


def check_drawers(page, name: str, where: str, report: Report) -> None:
    """At a phone's or tablet's width, a tap on the visible ☰ opens the site navigation, and a tap on
    the visible contents button (on pages that have contents) opens the page's contents."""
    for toggle in page.evaluate(TOGGLES_JS):
        kind = toggle["kind"]
        label = {"primary": "navigation (☰)", "secondary": "contents"}[kind]
        if not toggle["found"]:
            if kind == "primary" and toggle["header"]:
                report.add(name, f"{where}: no visible {label} button")
            continue
        page.mouse.click(toggle["x"], toggle["y"])
        page.wait_for_timeout(150)
        state = page.evaluate(DRAWER_OPEN_JS, kind)
        if not (state["open"] and state["links"]):
            report.add(name, f"{where}: a tap on the visible {label} button opens no drawer")
        if state["open"]:
            page.keyboard.press("Escape")
            page.wait_for_timeout(100)
    page.evaluate("() => window.scrollTo(0, 0)")


def _pdf_pages(pdf: bytes, scale: float):
    """The pages of a PDF, each as (pypdfium2 page, its rendering as a greyscale numpy array, scale)."""
    import numpy as np
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    for index in range(len(document)):
        page = document[index]
        image = page.render(scale=scale, grayscale=True).to_numpy()
        yield page, np.asarray(image).reshape(image.shape[0], image.shape[1], -1)[..., 0], scale


def check_printed_pdf(page, name: str, report: Report) -> dict:
    """Print the page to PDF (as a reader's "Print" does, at once, with no time for animations), render
    every PDF page to pixels, and check that each solution's first line of code is there as visible
    pixels (its text found in the PDF, and dark pixels where it stands) and that no page is blank."""
    import numpy as np

    lines = [line for line in page.evaluate(SOLUTION_CODE_JS) if line]
    # A reader's Print fires "beforeprint" (posenc.js opens the folds then) and lays the page out for
    # paper at once, before any animation started by it has run; page.pdf() fires no "beforeprint".
    # So "beforeprint" is sent as the browser sends it, and every animation it started is held at its
    # first frame (a print stylesheet that removes an animation still cancels it) while the PDF is taken.
    # The folds were opened and closed before (the solutions check, the emulated print media), and Chromium
    # skips the style of a closed fold's content: reopened, it would keep the animation that ended then,
    # and the PDF would show what a reader's first Print does not (on a loaded machine, where more than the
    # animation's length had passed). Reading the closed content's style first lets the reopening start
    # the animation afresh, as it does on a page just loaded.
    page.evaluate("""() => {
        for (const el of document.querySelectorAll('details:not([open]) *')) getComputedStyle(el).animationName;
        window.dispatchEvent(new Event('beforeprint'));
        window.posencHeld = document.getAnimations().filter(a => a.playState === 'running');
        for (const a of window.posencHeld) { a.pause(); a.currentTime = 0; } }""")
    pdf = page.pdf(format="A4", print_background=True)
    page.evaluate("""() => { for (const a of window.posencHeld || []) if (a.playState === 'paused') a.play();
        window.dispatchEvent(new Event('afterprint')); }""")
    seen: dict[str, bool] = {}
    blank = []
    pages = 0
    for number, (pdf_page, pixels, scale) in enumerate(_pdf_pages(pdf, scale=1.5), start=1):
        pages += 1
        if (pixels < 200).mean() < 1e-4:
            blank.append(number)
        text = pdf_page.get_textpage()
        height = pdf_page.get_height()
        for line in lines:
            if seen.get(line):
                continue
            searcher = text.search(line, match_case=True)
            found = searcher.get_next()
            if found is None:
                continue
            index, count = found
            boxes = [text.get_charbox(i) for i in range(index, index + count)]
            left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
            bottom, top = min(b[1] for b in boxes), max(b[3] for b in boxes)
            crop = pixels[int((height - top) * scale):int((height - bottom) * scale) + 1,
                          int(left * scale):int(right * scale) + 1]
            # visible: a share of the pixels clearly darker than the box's background (anti-aliased small
            # grey text included); a fold printed at opacity 0 leaves only the background
            seen[line] = bool(crop.size and (crop < np.median(crop) - 40).mean() > 0.01)
    for line in lines:
        if line not in seen:
            report.add(name, f"printed: a solution's code is not in the PDF: {line}")
        elif not seen[line]:
            report.add(name, f"printed: a solution's code is in the PDF but not visible (blank pixels): {line}")
    for number in blank:
        report.add(name, f"printed: page {number} of {pages} is blank")
    return {"pages": pages, "solutions": len(lines)}


def page_weight(site: Path, urls: list[str]) -> int:
    """Bytes of the files a page loaded (each file once)."""
    total = 0
    for url in dict.fromkeys(urls):
        path = _inside(url, site)
        if path is not None and path.is_file():
            total += path.stat().st_size
    return total


def check_links(page: str, links: list[str], own_ids: set[str], own: Path, site: Path, report: Report,
                cache: dict[Path, set[str]]) -> None:
    for url in dict.fromkeys(links):
        parts = urlsplit(url)
        if parts.scheme in {"http", "https", "mailto"}:
            continue  # a link in prose to the outside world: not fetched by the page, not checked here
        if parts.scheme == "javascript" or url.startswith("data:"):
            continue
        target = _inside(url, site)
        if target is None:
            report.add(page, f"link leaves the site: {url}")
            continue
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            report.add(page, f"broken link: {target.relative_to(site)} does not exist")
            continue
        anchor = unquote(parts.fragment)
        if anchor and target.suffix == ".html":
            ids = own_ids if target == own else _ids_of(target, cache)
            if anchor not in ids:
                report.add(page, f"broken link: no #{anchor} in {target.relative_to(site)}")


def search_term(site: Path) -> tuple[str, str] | None:
    """A word of the prose (``<p>`` text) that appears on exactly one page, a notebook page: what search
    must find. The longest such word of the first notebook page that has one."""
    counts: Counter[str] = Counter()
    words_of: dict[str, set[str]] = {}
    pages = sorted(p for p in site.glob("[0-9][0-9]_*.html"))
    for path in sorted(site.glob("*.html")):
        prose = " ".join(re.findall(r"<p\b[^>]*>(.*?)</p>", path.read_text(encoding="utf-8"), re.S))
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<code\b.*?</code>", " ", prose, flags=re.S))
        words = {w.lower() for w in WORD.findall(text)}
        words_of[path.name] = words
        counts.update(words)
    for path in pages:
        unique = sorted(w for w in words_of[path.name] if counts[w] == 1 and "-" not in w)
        if unique:
            return max(unique, key=len), path.name
    return None


def default_searches(site: Path) -> list[tuple]:
    """A word found on one notebook page only, a Chinese term of the glossary (learners search in both),
    and "RoPE", whose first result must be its notebook (03), not an API module (a third element
    "first": the page must rank first)."""
    found: list[tuple] = [term] if (term := search_term(site)) else []
    if (site / "glossary.html").exists():
        found.append(("位置编码", "glossary.html"))
    if (site / "03_rope.html").exists():
        found.append(("RoPE", "03_rope.html", "first"))
    return found


# Chinese searches (the Chinese site): course terms that a notebook's title holds, which must find it (the
# glossary's entry for the term may rank first: Sphinx scores an index entry by how much of it the query
# covers); the glossary term 位置编码, and RoPE, whose notebook must rank first (as on the English site).
ZH_SEARCHES = ("旋转位置编码", "外推")


def search_index(site: Path) -> dict:
    """The site's search index (``searchindex.js``, ``Search.setIndex({...})``) as data."""
    import json

    text = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def search_term_zh(site: Path) -> tuple[str, str] | None:
    """A Chinese word of the search index that one notebook page holds and no other page (the Chinese
    counterpart of ``search_term``): the longest, then the first in order, of words of three Chinese
    characters or more. None when the index has none (a site not yet translated)."""
    if not (site / "searchindex.js").is_file():
        return None
    index = search_index(site)
    names = index["docnames"]
    found = []
    for word, docs in index["terms"].items():
        docs = [docs] if isinstance(docs, int) else docs
        if (len(docs) == 1 and re.fullmatch(r"\d\d_\w+", names[docs[0]]) and len(word) >= 3
                and re.fullmatch(r"[\u4e00-\u9fff]+", word) and word not in index["titleterms"]):
            found.append((-len(word), word, f"{names[docs[0]]}.html"))
    return min(found)[1:] if found else None


def default_searches_zh(site: Path) -> list[tuple]:
    """The Chinese site's searches: a Chinese word found on one notebook page only (``search_term_zh``);
    each term of ``ZH_SEARCHES`` that a notebook's title holds, which must find that notebook; the
    glossary's 位置编码; and RoPE, which must list its notebook (03) first."""
    found: list[tuple] = [term] if (term := search_term_zh(site)) else []
    titles = {path.name: (re.search(r"<h1\b.*?</h1>", path.read_text(encoding="utf-8"), re.S) or [""])[0]
              for path in sorted(site.glob("[0-9][0-9]_*.html"))}
    for term in ZH_SEARCHES:
        page = next((name for name, title in titles.items() if term in title), None)
        if page:
            found.append((term, page))
    if (site / "glossary.html").exists():
        found.append(("位置编码", "glossary.html"))
    if (site / "03_rope.html").exists():
        found.append(("RoPE", "03_rope.html", "first"))
    return found


def _check_search(page, site: Path, searches: list[tuple[str, str]], shots: Path | None, report: Report,
                  events: list[str], prefix: str = "") -> None:
    """Each search of ``searches`` on the site's search page (``prefix``: the site's folder in the report's
    page names, ``zh_CN/`` for the Chinese site)."""
    where = f"{prefix}search.html"
    if not (site / "search.html").exists():
        report.add(where, "the site has no search page")
        return
    if not searches:
        report.add(where, "no word found that appears on exactly one page, nothing to search for")
    for i, (term, expected, *rank) in enumerate(searches):
        events.clear()
        page.set_viewport_size(DESKTOP)
        page.goto((site / "search.html").as_uri() + "?q=" + quote(term), wait_until="load")
        try:  # finished: Sphinx lists the results one by one, then writes its summary line ("Search finished,
            # found ...", in the page's language); a page without that line (a test's) once it lists one
            page.wait_for_function(
                "() => { const line = document.querySelector('#search-results p.search-summary');"
                " return line ? line.textContent.trim() : document.querySelector('#search-results li'); }",
                timeout=10_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError; reported as a problem
            report.add(where, f"search for {term!r} did not finish within 10 s")
        hits = page.eval_on_selector_all("#search-results li > a", "as => as.map(a => a.href)")
        found = sorted({Path(urlsplit(h).path).name for h in hits})
        if expected not in found:
            report.add(where, f"search for {term!r} did not find {expected} (found {found})")
        elif rank and Path(urlsplit(hits[0]).path).name != expected:
            first = urlsplit(hits[0]).path.split("/")[-2:]
            report.add(where, f"search for {term!r} lists {'/'.join(first)} before {expected}")
        try:  # each result's summary (the text around the word) arrives after its link
            page.wait_for_function("() => [...document.querySelectorAll('#search-results li:not(.kind-object)')]"
                                   ".every(li => li.querySelector('p.context'))", timeout=5_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError; the results without one are reported
            pass
        # the pages found (an API object's entry has no text to summarise: Sphinx shows its name alone)
        results = page.eval_on_selector_all("#search-results li:not(.kind-object)", "lis => lis.map(li => "
                                            "[li.querySelector('a').textContent, !!li.querySelector('p.context')])")
        for label, _ in results:
            if [r[0] for r in results].count(label) > 1:
                report.add(where, f"search for {term!r}: several results labelled {label!r}")
                break
        for label, has_summary in results:
            if not has_summary:
                report.add(where, f"search for {term!r}: result {label!r} shows no summary of its text")
        for event in dict.fromkeys(events):
            report.add(where, event)
        report.pages[f"{where}?q={term}"] = {"expected": expected, "found": ", ".join(found)}
        if shots:
            page.screenshot(path=str(shots / f"search-{i}.png"))


def language_sites(root: Path) -> list[tuple[str, Path]]:
    """The sites of a build under ``root``: ("en", root) when it holds pages, ("zh", root/zh_CN) when that
    folder does (tools/build_site.py renders the Chinese site there). A folder of pages of one language
    (a synthetic site, a test page) is checked as the language of its ``<html lang>``."""
    found = []
    if list(root.glob("*.html")):
        found.append((page_language(next(iter(sorted(root.glob("*.html"))))), root))
    if (root / ZH_FOLDER).is_dir() and list((root / ZH_FOLDER).glob("*.html")):
        found.append(("zh", root / ZH_FOLDER))
    return found


def page_language(path: Path) -> str:
    """"zh" for a page whose ``<html lang>`` is Chinese, else "en"."""
    m = re.search(r"<html\b[^>]*\blang=\"([^\"]*)\"", path.read_text(encoding="utf-8", errors="replace")[:2000])
    return "zh" if m and m[1].lower().startswith("zh") else "en"


SKIPPED_FOLDERS = {"_static", "_sources", "_images", "_downloads", "_files", "_source", "downloads", "files"}
SWITCH_LINK = re.compile(r'<a\b[^>]*\bclass="[^"]*\bposenc-language\b[^"]*"[^>]*>')
SECTION_ID = re.compile(r'<(?:section|dt)\b[^>]*\bid="([^"]+)"')


def _site_pages(site: Path, root: Path) -> list[Path]:
    """Every HTML page of the site in ``site`` (its own, not the other language's folder under it)."""
    return sorted(path for path in site.rglob("*.html")
                  if not set(path.relative_to(site).parts[:-1]) & SKIPPED_FOLDERS
                  and not (site == root and path.relative_to(site).parts[0] == ZH_FOLDER))


def check_languages(root: Path, report: Report) -> dict[str, int]:
    """The two sites of a build, read as files (every page, in subfolders too): each page's ``<html lang>``
    is its site's; it has one language switch, which points to the same page in the other site, a page
    that exists; and every section and glossary-term anchor of an English page is an anchor of its
    Chinese page (a link with an #anchor lands in the same place in both). Returns pages per language."""
    sites = dict((lang, site) for lang, site in language_sites(root))
    counts = {}
    if set(sites) != {"en", "zh"}:
        return counts
    for lang, site in sites.items():
        other = sites["zh" if lang == "en" else "en"]
        pages = _site_pages(site, root)
        counts[lang] = len(pages)
        for path in pages:
            name = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            m = re.search(r"<html\b[^>]*\blang=\"([^\"]*)\"", text[:2000])
            if m is None or not m[1].lower().startswith(lang):
                report.add(name, f"<html lang={m[1] if m else None!r}> on a page of the {lang} site")
            links = SWITCH_LINK.findall(text)
            if len(links) != 1:
                report.add(name, f"{len(links)} language switches (one expected)")
                continue
            href = re.search(r'\bhref="([^"]*)"', links[0])
            target = (path.parent / unquote(href[1])).resolve() if href else None
            same = other / path.relative_to(site)
            if target != same.resolve():
                report.add(name, f"the language switch points to {href[1] if href else None!r}, not to "
                                 f"{same.relative_to(root).as_posix()}")
            elif not same.is_file():
                report.add(name, f"the language switch points to {same.relative_to(root).as_posix()}, which does not exist")
            elif lang == "en":
                missing = sorted(set(SECTION_ID.findall(text)) - set(SECTION_ID.findall(same.read_text(encoding="utf-8"))))
                if missing:
                    report.add(name, f"anchors missing from {same.relative_to(root).as_posix()}: {', '.join(missing[:5])}"
                                     + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    return counts


def check_switch_on_screen(page, name: str, where: str, report: Report) -> None:
    """The language switch is drawn on screen, uncut, at the top of the page (at the current width)."""
    page.evaluate("() => window.scrollTo(0, 0)")
    switches = page.evaluate(SWITCH_JS)
    if switches and not all(s["shown"] for s in switches):
        report.add(name, f"{where}: the language switch ({switches[0]['text']!r}) is not shown at the top of the page")


def check_switch_follows(page, site: Path, other: Path, report: Report) -> list[str]:
    """Following the switch from a notebook page opened at a section's #anchor lands on the same page of
    the other language at the same anchor (which exists there); from the search page, with the query.
    Returns what was followed, for the report."""
    followed = []
    notebook = next(iter(sorted(site.glob("[0-9][0-9]_*.html"))), None)
    cases = []
    if notebook is not None:
        ids = SECTION_ID.findall(notebook.read_text(encoding="utf-8"))
        anchor = ids[min(2, len(ids) - 1)] if ids else ""
        cases.append((notebook.as_uri() + (f"#{anchor}" if anchor else ""), other / notebook.name, anchor, ""))
    if (site / "search.html").is_file():
        cases.append((site.joinpath("search.html").as_uri() + "?q=" + quote("RoPE"), other / "search.html", "", "?q=RoPE"))
    for url, expected, anchor, query in cases:
        name = Path(urlsplit(url).path).name
        label = f"{site.name if site.name == ZH_FOLDER else ''}/{name}".lstrip("/")
        page.set_viewport_size(DESKTOP)
        page.goto(url, wait_until="load")
        if not page.query_selector("a.posenc-language"):
            continue  # reported as a missing switch
        try:
            with page.expect_navigation(wait_until="load", timeout=10_000):
                page.click("a.posenc-language")
        except Exception:  # noqa: BLE001 - playwright's TimeoutError; reported
            report.add(label, "following the language switch goes nowhere")
            continue
        landed = urlsplit(page.url)
        if Path(unquote(landed.path)).resolve() != expected.resolve():
            report.add(label, f"the language switch leads to {unquote(landed.path)}, not {expected}")
        elif unquote(landed.fragment) != anchor:
            report.add(label, f"the language switch drops the reader's place: #{anchor} became #{landed.fragment}")
        elif anchor and not page.evaluate("(id) => !!document.getElementById(id)", anchor):
            report.add(label, f"the language switch lands on #{anchor}, which {expected.name} does not have")
        elif query and f"?{landed.query}" != query:
            report.add(label, f"the language switch drops the search query ({query} became ?{landed.query})")
        else:
            followed.append(f"{label}{'#' + anchor if anchor else query}")
    return followed


def check_cjk_font(page, name: str, report: Report) -> dict:
    """On a Chinese page: its Chinese text is drawn with a font that has the characters (CJK_FONT_JS);
    the font Chromium used for that text (DevTools' platform fonts), for the report."""
    facts = page.evaluate(CJK_FONT_JS)
    if not facts["found"]:
        report.add(name, "no paragraph of Chinese text to check the CJK font on")
        return {}
    if facts["distinct"] < 4 or facts["inked"] < 4:
        report.add(name, f"Chinese text is not drawn with a CJK font (font-family {facts['family']}: "
                         f"{facts['distinct']} different glyph images for 4 characters, {facts['inked']} with ink); "
                         "install one (make chromium installs fonts-wqy-microhei)")
    fonts = []
    try:
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-posenc-cjk]"})["nodeId"]
        fonts = [f"{f['familyName']} ({f['glyphCount']})" for f in
                 cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]
        cdp.detach()
    except Exception:  # noqa: BLE001 - the report's detail only; the check above decides
        pass
    return {"CJK font": ", ".join(fonts) or facts["family"]}


def check_site(site: Path, shots: Path | None = None, searches: list[tuple[str, str]] | None = None,
               check_search: bool = True, languages: tuple[str, ...] = ("en", "zh"),
               zh_pages: list[str] | None = None, en_pages: list[str] | None = None,
               axe_pages: dict[str, set[str]] | None = None) -> Report:
    """Open every top-level page of ``site`` in headless Chromium and check it; see the module docstring.

    ``site`` is a build's output folder: the English site at its root and the Chinese one in ``zh_CN/``
    (tools/build_site.py), each checked with every check, in its own words (``TEXTS``), plus the
    language checks (``check_languages``, the switch on screen and followed, the CJK font). A folder of
    pages in one language is checked as that language. ``languages``: the sites to open in the browser
    (the file checks of ``check_languages`` cover both always). ``zh_pages``, ``en_pages``: open only these
    pages of the Chinese or English site in the browser (``make test`` opens a few; ``make check-site`` all).
    ``axe_pages``: per language (``en``, ``zh``), the pages axe-core checks (``AXE_PAGES``); None: every page opened.

    ``searches``: (term, page) pairs that search must find in the English site; by default see
    ``default_searches`` (and ``default_searches_zh`` for the Chinese site).
    ``check_search=False`` skips the search check (for a folder of pages with no search page).
    """
    from playwright.sync_api import sync_playwright

    root = site.resolve()
    report = Report()
    start = time.perf_counter()
    sites = [(lang, folder) for lang, folder in language_sites(root) if lang in languages]
    if not language_sites(root):
        report.add(str(root), "no *.html pages")
        return report
    report.languages = check_languages(root, report)
    if shots:
        if shots.exists():
            shutil.rmtree(shots)
        shots.mkdir(parents=True)
    ids_cache: dict[Path, set[str]] = {}
    profile = Path(tempfile.mkdtemp(prefix="posenc-chromium-"))
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(profile), executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True,
                viewport=DESKTOP, ignore_default_args=["--enable-automation", "--hide-scrollbars"],
            )  # scrollbars shown, as on Windows and most Linux desktops (Playwright hides them by default)
            events: list[str] = []
            current = {"site": root}  # the site whose page is open: requests must stay inside its folder

            def block(route) -> None:
                events.append(f"request leaves the site: {route.request.url}")
                route.abort()

            context.route(re.compile(r"^(https?|wss?|ftp):"), block)
            page = context.pages[0] if context.pages else context.new_page()
            page.on("console", lambda msg: events.append(f"console {msg.type}: {msg.text}")
                    if msg.type == "error" else None)
            page.on("pageerror", lambda err: events.append(f"uncaught exception: {err}"))
            page.on("requestfailed", lambda req: events.append(
                f"request failed: {req.url} ({req.failure})") if not re.match(r"^(https?|wss?|ftp):", req.url) else None)
            page.on("request", lambda req: events.append(f"request outside the site folder: {req.url}")
                    if req.url.startswith("file:") and req.resource_type != "document"
                    and _inside(req.url, current["site"]) is None else None)
            loaded: list[str] = []
            page.on("request", lambda req: loaded.append(req.url))

            with_explorers: list[tuple[Path, str]] = []
            for lang, folder in sites:
                current["site"] = folder
                prefix = "" if folder == root else f"{folder.relative_to(root).as_posix()}/"
                pages = sorted(folder.glob("*.html"))
                only = {"zh": zh_pages, "en": en_pages}.get(lang)
                if only is not None:
                    pages = [p for p in pages if p.name in only]
                elif axe_pages is not None:  # a page renamed away would leave axe-core checking nothing
                    for gone in sorted(set(axe_pages.get(lang, ())) - {p.name for p in pages}):
                        report.add(prefix + gone, "a page axe-core is to check (AXE_PAGES) is not in the site")
                lang_shots = (shots / prefix) if shots and prefix else shots
                if lang_shots:
                    lang_shots.mkdir(parents=True, exist_ok=True)
                for path in pages:
                    name = prefix + path.name
                    axe = axe_pages is None or path.name in axe_pages.get(lang, ())
                    explorers = _check_page(page, path, name, folder, lang, lang_shots, report, events, loaded, ids_cache,
                                            axe)
                    if explorers:
                        with_explorers.append((path, name))
                if lang == "zh" and pages:
                    page.goto(((folder / "index.html") if (folder / "index.html").is_file() else pages[0]).as_uri(),
                              wait_until="load")
                    report.pages[f"{prefix}(CJK font)"] = check_cjk_font(page, f"{prefix}index.html", report)
                if check_search:
                    events.clear()
                    wanted = (searches or default_searches(folder)) if lang == "en" else default_searches_zh(folder)
                    _check_search(page, folder, wanted, lang_shots, report, events, prefix)
                others = dict(language_sites(root))
                if set(others) == {"en", "zh"}:
                    events.clear()
                    followed = check_switch_follows(page, folder, others["zh" if lang == "en" else "en"], report)
                    report.pages[f"{prefix}(language switch)"] = {"followed": ", ".join(followed) or "none"}
            context.close()
            if with_explorers:
                check_explorers_without_scripts(pw, with_explorers, report)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    report.seconds = time.perf_counter() - start
    return report


def _check_page(page, path: Path, name: str, site: Path, lang: str, shots: Path | None, report: Report,
                events: list[str], loaded: list[str], ids_cache: dict[Path, set[str]], axe: bool = True) -> int:
    """Every check of one page (see the module docstring), axe-core's with ``axe``; returns how many explorers it
    has."""
    text = TEXTS[lang]
    started = time.perf_counter()
    events.clear()
    loaded.clear()
    page.set_viewport_size(DESKTOP)
    page.goto(path.as_uri(), wait_until="load")
    facts = page.evaluate(PAGE_FACTS_JS)
    page.wait_for_timeout(100)  # let late requests (fonts) settle before reading events
    for label, pattern in ((label, p) for p, label in RAW_TEX):
        for m in pattern.finditer(facts["text"]):
            context_text = facts["text"][max(0, m.start() - 30): m.end() + 30].replace("\n", " ")
            report.add(name, f"raw TeX ({label}) in the visible text: ...{context_text}...")
            break
    if facts["mathErrors"]:
        report.add(name, f"{facts['mathErrors']} MathJax error(s)")
    for img in facts["images"]:
        if not img["ok"]:
            report.add(name, f"image not decoded: {img['src']}")
        alt = (img["alt"] or "").strip()
        if not alt or re.search(r"\.(png|jpe?g|gif|svg)$", alt, re.I):
            report.add(name, f"image without a meaningful alt text: {img['src']} (alt={alt!r})")
    check_links(name, facts["links"], set(facts["ids"]), path, site, report, ids_cache)
    weight = page_weight(site, loaded)
    check_clipping(page, name, f"at {DESKTOP['width']} px", report)
    check_switch_on_screen(page, name, f"at {DESKTOP['width']} px", report)
    formulas = check_inline_math(page, name, f"at {DESKTOP['width']} px", report)
    code = check_code(page, name, f"at {DESKTOP['width']} px", report)
    noise = [line for line in page.evaluate(OUTPUT_LINES_JS) if is_noise(line)]
    for line in dict.fromkeys(noise):
        report.add(name, f"an output line the site must not show: {line.strip()[:80]}")
    layout = check_layout(page, name, f"at {DESKTOP['width']} px", report, index=index_page(name), start=text["start"])
    axe_started = time.perf_counter()
    if axe:
        check_accessibility(page, name, report)
    axe_seconds = time.perf_counter() - axe_started
    report.axe_seconds += axe_seconds
    if shots:
        page.screenshot(path=str(shots / f"{path.stem}.png"))
    if layout["enlargeable"] and (problem := page.evaluate(ENLARGE_JS)):
        report.add(name, problem)
    page.set_viewport_size(NARROW_DESKTOP)
    page.wait_for_timeout(100)
    check_clipping(page, name, f"at {NARROW_DESKTOP['width']} px", report)
    check_layout(page, name, f"at {NARROW_DESKTOP['width']} px", report, index=False, start=text["start"])
    page.set_viewport_size(DESKTOP)
    solutions = page.evaluate(SOLUTIONS_JS, text["exercise"])
    for problem in solutions["problems"]:
        report.add(name, problem)
    explorers = check_explorers(page, name, report)
    page.emulate_media(media="print")
    page.evaluate(NEXT_FRAME_JS)
    for problem in page.evaluate(PRINT_JS) + page.evaluate(PRINT_EXPLORERS_JS):
        report.add(name, problem)
    for label in page.evaluate(PRINT_LABELS_JS):
        if not re.fullmatch(text["print_label"], label):
            report.add(name, f"a solution prints labelled {label!r}, not '{text['print_label_text']}'")
            break
    # back to no emulation ("null"): emulated "screen" would stay in force for page.pdf(),
    # which then prints with the screen styles
    page.emulate_media(media="null")
    page.evaluate(NEXT_FRAME_JS)
    printed = check_printed_pdf(page, name, report) if solutions["count"] or index_page(name) else {}
    page.set_viewport_size(TABLET)
    page.wait_for_timeout(150)
    check_drawers(page, name, f"at {TABLET['width']} px", report)
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(150)
    check_clipping(page, name, f"on a {PHONE['width']} px phone", report)
    check_switch_on_screen(page, name, f"on a {PHONE['width']} px phone", report)
    check_drawers(page, name, f"on a {PHONE['width']} px phone", report)
    phone = page.evaluate(PHONE_JS, text["start"])
    for item in phone["narrow"]:
        report.add(name, f"figure narrower than a {PHONE['width']} px phone's screen: {item}")
    if phone["sideways"]:
        report.add(name, f"page scrolls sideways on a {PHONE['width']} px phone by {phone['sideways']} px "
                         "with every fold open")
    # (a front page without "Start here" at all is reported once, by check_layout)
    if index_page(name) and phone["startTop"] is not None and phone["startTop"] > PHONE["height"]:
        report.add(name, f'"Start here" is not within the first screen of a {PHONE["width"]} px phone '
                         f"(its top at {phone['startTop']} px)")
    for explorer in page.evaluate(EXPLORER_FACTS_JS):
        if explorer["built"] and explorer["smallest"] < MIN_PHONE_EXPLORER_TEXT_PX:
            report.add(name, f"explorer {explorer['name']} on a {PHONE['width']} px phone: text drawn at "
                             f"{explorer['smallest']:.1f} px, under {MIN_PHONE_EXPLORER_TEXT_PX} px")
    if shots:
        page.screenshot(path=str(shots / f"{path.stem}.phone.png"))
    for event in dict.fromkeys(events):
        report.add(name, event)
    report.pages[name] = {"formulas": facts["math"], "inline formulas": formulas,
                          "code lines": code["lines"], "code columns": code["capacity"],
                          "images": len(facts["images"]),
                          "links": len(set(facts["links"])), "solutions": solutions["count"],
                          "explorers": explorers, "kB loaded": round(weight / 1000),
                          "phone: scrolling in their box": ", ".join(
                              f"{n} {kind}" for kind, n in phone["boxes"].items() if n) or "none",
                          **({"printed pages": printed["pages"]} if printed else {}),
                          "checked in s": round(time.perf_counter() - started, 1),
                          **({"of which axe-core": round(axe_seconds, 1)} if axe else {})}
    return explorers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / "build" / "html",
                        help="a build's output folder: the English site, and the Chinese one in its zh_CN/")
    parser.add_argument("--shots", type=Path, default=ROOT / "build" / "site-check",
                        help="folder for the screenshots (replaced; the Chinese site's in its zh_CN/)")
    parser.add_argument("--search", nargs=2, action="append", metavar=("TERM", "PAGE"),
                        help="search TERM, expect PAGE among the hits of the English site (repeatable; default: see "
                             "default_searches)")
    parser.add_argument("--language", choices=["all", "en", "zh"], default="all",
                        help="the site(s) to open in the browser (the language switch and anchors are checked as "
                             "files in both always)")
    parser.add_argument("--zh-pages", nargs="+", metavar="PAGE",
                        help="open only these top-level pages of the Chinese site (default: all)")
    parser.add_argument("--en-pages", nargs="+", metavar="PAGE",
                        help="open only these top-level pages of the English site (default: all)")
    parser.add_argument("--axe-all", action="store_true",
                        help="run axe-core on every page opened (default: on the pages of AXE_PAGES)")
    args = parser.parse_args(argv)
    languages = ("en", "zh") if args.language == "all" else (args.language,)
    report = check_site(args.site, args.shots, [tuple(s) for s in args.search] if args.search else None,
                        languages=languages, zh_pages=args.zh_pages, en_pages=args.en_pages,
                        axe_pages=None if args.axe_all else AXE_PAGES)
    for name, facts in report.pages.items():
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    verdict = "passed" if not report.problems else f"{len(report.problems)} problem(s)"
    pages = [name for name in report.pages if "?" not in name and "(" not in name]
    per_language = Counter("zh" if name.startswith(f"{ZH_FOLDER}/") else "en" for name in pages)
    split = ", ".join(f"{lang} {n}" for lang, n in per_language.items())
    files = (f"; language switch and anchors of {' + '.join(f'{n} {lang}' for lang, n in report.languages.items())} "
             "pages read as files" if report.languages else "")
    print(f"check_site: {len(pages)} page(s) ({split}) and {sum('?' in n for n in report.pages)} search(es) "
          f"checked in a browser in {report.seconds:.1f} s (axe-core's accessibility rules on {sum('of which axe-core' in f for f in report.pages.values())} of them, {report.axe_seconds:.1f} s of it)"
          f"{files}, {verdict}")
    return 0 if not report.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
