// posenc course site: behaviours the theme does not have (loaded by tools/site/conf.py).
"use strict";

// The few words this script writes, in the page's language (the site is built in English and Chinese;
// the rest of the site's own text comes from posenc_site.UI at build time).
const POSENC_TEXT = {
  en: {
    enlarge: "Open the figure at full size",
    // a solution fold's prompt ("Show the solution to exercise 2") -> its label on paper ("Solution to exercise 2")
    printLabel: (prompt) => { const text = prompt.replace(/^Show (the )?/, ""); return text.charAt(0).toUpperCase() + text.slice(1); },
  },
  zh: {
    enlarge: "点击查看原尺寸图片",
    printLabel: (prompt) => prompt.replace(/^显示/, ""),  // 显示练习 2 的答案 -> 练习 2 的答案
  },
}[document.documentElement.lang.startsWith("zh") ? "zh" : "en"];

// The language switch (a link to this page in the other language): it takes the reader's place on the
// page with it (the #anchor, the same in both languages) and, on the search page, the query.
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a.posenc-language")) {
    const base = link.getAttribute("href").split(/[?#]/)[0];
    const follow = () => {
      const search = /(^|\/)search\.html$/.test(location.pathname) ? location.search : "";
      link.setAttribute("href", base + search + location.hash);
    };
    follow();
    window.addEventListener("hashchange", follow);
    link.addEventListener("click", follow);
  }
});

// Print: every fold opens (solutions, deep dives), so that paper shows what a click would; the folds
// a reader had closed close again afterwards. Both events are listened to: Chromium fires
// "beforeprint", and the print media query changes when a page is printed or emulated as print.
(() => {
  const opened = [];
  const openAll = () => {
    for (const fold of document.querySelectorAll("details:not([open])")) { fold.open = true; opened.push(fold); }
  };
  const restore = () => { for (const fold of opened.splice(0)) fold.open = false; };
  window.addEventListener("beforeprint", openAll);
  window.addEventListener("afterprint", restore);
  window.matchMedia("print").addEventListener("change", (event) => (event.matches ? openAll() : restore()));
})();

// Figures: a click opens one at its full size (it is drawn at 150 dpi, shown scaled to the column);
// a click or Escape closes it. The figure is also a link to the image file, for a new tab.
document.addEventListener("DOMContentLoaded", () => {
  const dialog = document.createElement("dialog");
  dialog.className = "posenc-figure";
  dialog.addEventListener("click", () => dialog.close());
  document.body.appendChild(dialog);
  for (const img of document.querySelectorAll("div.cell_output img")) {
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "posenc-enlarge";
    link.title = POSENC_TEXT.enlarge;
    img.replaceWith(link);
    link.appendChild(img);
    link.addEventListener("click", (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      const full = img.cloneNode();
      full.removeAttribute("width");
      full.removeAttribute("height");
      full.style.width = `${img.naturalWidth}px`;
      dialog.replaceChildren(full);
      dialog.showModal();
    });
  }
});

// Phones: each figure is drawn across the page's whole width (posenc.css). Its left margin is minus the
// left edge of its column, measured here, and its width the page's (document.documentElement's, which
// leaves out a scrollbar shown beside the page); a figure in a closed fold is measured when the fold
// opens. Wider screens, and print, keep figures in their column.
(() => {
  const phone = window.matchMedia("(max-width: 600px)");
  const bleed = () => {
    const width = document.documentElement.clientWidth;
    for (const link of document.querySelectorAll("div.cell_output a.posenc-enlarge")) {
      const column = link.parentElement;
      if (!phone.matches || !column.checkVisibility()) {
        link.style.removeProperty("--posenc-bleed-left");
        link.style.removeProperty("--posenc-bleed-width");
        continue;
      }
      const style = getComputedStyle(column);
      const left = column.getBoundingClientRect().left + window.scrollX +
        parseFloat(style.borderLeftWidth) + parseFloat(style.paddingLeft);
      link.style.setProperty("--posenc-bleed-left", `${-left}px`);
      link.style.setProperty("--posenc-bleed-width", `${width}px`);
    }
  };
  document.addEventListener("DOMContentLoaded", bleed);
  window.addEventListener("load", bleed);  // the page at its full length: a scrollbar may have appeared
  window.addEventListener("resize", bleed);
  document.addEventListener("toggle", bleed, true);  // a fold opened (toggle does not bubble)
})();

// Search (search.html only, where posenc_search_text.js defines POSENC_SEARCH): Sphinx fetches each
// result's page for its summary, which a page opened from file:// may not do. The page's prose,
// written at build time, answers instead; and a result that points at a glossary term or a section
// is labelled "Page > term", so that two hits on one page read differently.
if (window.POSENC_SEARCH) {
  const escape = (text) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const relative = (url) => {
    const root = new URL(document.documentElement.dataset.content_root || "./", location.href).pathname;
    return decodeURIComponent(new URL(url, location.href).pathname).slice(root.length).replace(/\.html$/, "");
  };
  const original = window.fetch.bind(window);
  window.fetch = (url, options) => {
    const page = POSENC_SEARCH[relative(String(url))];
    if (!page) return original(url, options);
    const sections = Object.entries(page.sections)
      .map(([id, text]) => `<section id="${escape(id)}">${escape(text)}</section>`).join("");
    return Promise.resolve(new Response(`<div role="main">${sections}</div>`, { headers: { "Content-Type": "text/html" } }));
  };
  new MutationObserver(() => {
    for (const link of document.querySelectorAll("#search-results li > a:not([data-posenc])")) {
      link.dataset.posenc = "1";
      const url = new URL(link.href, location.href);
      const label = POSENC_SEARCH[relative(link.href)]?.labels[decodeURIComponent(url.hash.slice(1))];
      if (label && url.hash && !link.textContent.includes(" > ") && link.textContent !== label) {
        link.textContent = `${link.textContent} > ${label}`;
      }
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
}

// Navigation on phones and tablets: each page has two ☰ buttons (.primary-toggle) and two contents
// buttons (.secondary-toggle), one in the theme's header and one in the article's header.
// pydata-sphinx-theme 0.20.0 binds only the first of each (document.querySelector), which is the
// header's copy, hidden below 960 px; the visible one did nothing (docs/site.md). A click on any
// other copy is handed to the bound one, so the drawer (or, on a desktop, the collapsing sidebar)
// answers whichever button the reader sees.
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary", "secondary"]) {
    const [bound, ...others] = document.querySelectorAll(`.${kind}-toggle`);
    for (const button of others) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        bound.click();
      });
    }
  }
});

// Solutions on paper: a fold's label says "Show/Hide the solution to exercise N", which means nothing
// on paper; the print stylesheet shows this label instead ("Solution to exercise N"; 练习 N 的答案).
// A link to a solution (#solution-N, under each exercise) opens its fold.
document.addEventListener("DOMContentLoaded", () => {
  for (const prompt of document.querySelectorAll("div.cell details.hide > summary > p.collapsed")) {
    const label = document.createElement("p");
    label.className = "posenc-print-label admonition-title";
    label.textContent = POSENC_TEXT.printLabel(prompt.textContent.trim());
    prompt.parentElement.appendChild(label);
  }
  const openTarget = () => {
    const anchor = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const cell = anchor && anchor.closest(".posenc-solution-anchor") ? anchor.nextElementSibling : null;
    const fold = cell && cell.querySelector("details");
    if (fold) { fold.open = true; anchor.scrollIntoView(); }
  };
  window.addEventListener("hashchange", openTarget);
  openTarget();
});

// Inline formulas: not scroll boxes (posenc.css), except one wider than the line it stands in (a long
// formula on a phone), which gets the class posenc-wide-math and scrolls in its own box, reachable from
// the keyboard (tabindex 0: arrow keys scroll it; axe-core's scrollable-region-focusable). Marked once
// MathJax has typeset the page, and again when the window's width changes.
window.addEventListener("load", () => {
  const block = (el) => { for (let a = el.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).display !== "inline") return a; } return document.body; };
  const mark = () => {
    for (const math of document.querySelectorAll("span.math")) {
      math.classList.remove("posenc-wide-math");
      math.removeAttribute("tabindex");
      const parent = block(math);
      const room = parent.clientWidth - parseFloat(getComputedStyle(parent).paddingLeft) -
        parseFloat(getComputedStyle(parent).paddingRight);
      if (math.getBoundingClientRect().width > room + 1) {
        math.classList.add("posenc-wide-math");
        math.setAttribute("tabindex", "0");
      }
    }
  };
  const ready = window.MathJax && MathJax.startup && MathJax.startup.promise;
  (ready || Promise.resolve()).then(mark);
  let width = innerWidth;
  window.addEventListener("resize", () => { if (innerWidth !== width) { width = innerWidth; mark(); } });
});
