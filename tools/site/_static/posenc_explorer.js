// posenc course site: the explorers, drawn as SVG from values posenc_lib computed at build time.
//
// tools/site/posenc_site.py puts an empty <div class="posenc-explorer" data-explorer="NAME" hidden>
// after the static figure of each notebook cell that calls an explorer, and loads this script with
// _static/posenc_explorer_NAME.js, which holds posenc_course.explorers.export_explorer(NAME):
// the controls, the panels to draw, and the library's value arrays for every setting of the controls.
// This script computes nothing about any encoding: it looks the arrays of the chosen setting up
// (index arithmetic over the controls' option indices) and draws them. Without scripts, and in
// print, the notebook's own static figure (the default setting) is what shows.
//
// Every drawn series carries its arrays (data-x, data-y) and their keys (data-xkey, data-ykey), so
// that tools/check_site.py can compare what is drawn with what posenc_lib computes.
"use strict";

(() => {
  const NS = "http://www.w3.org/2000/svg";
  const PX = 100; // SVG units per inch of the figure (a 7.5-inch figure is 750 units wide)
  const PT = PX / 72; // SVG units per point (line widths, dashes and markers are in points)
  const FONT = { tick: 14, label: 14, legend: 14, sup: 12, title: 15, caption: 16 };
  const MARGIN = { left: 66, right: 14, top: 30, bottom: 50 };
  const GRID = "#b0b0b0";
  let clipCount = 0;

  const node = (name, attrs = {}, parent = null, text = null) => {
    const el = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, value);
    if (text !== null) el.textContent = text;
    if (parent) parent.appendChild(el);
    return el;
  };

  // A tick label from posenc_course.explorers.axis_ticks: "10^3" is 10 with a superscript 3.
  const label = (parent, text, attrs) => {
    const el = node("text", { "font-size": FONT.tick, ...attrs }, parent);
    const [base, power] = text.split("^");
    el.appendChild(document.createTextNode(base));
    if (power !== undefined) node("tspan", { dy: -6, "font-size": FONT.sup, class: "sup" }, el, power);
    return el;
  };

  // The array of `key` at the current setting: its controls' option indices, row-major.
  const lookup = (spec, state, key) => {
    const entry = spec.values[key];
    let index = 0;
    for (const name of entry.controls) {
      const control = spec.controls.find((c) => c.name === name);
      index = index * control.options.length + state[name];
    }
    return entry.arrays[index];
  };

  // Map a value to a pixel along an axis [start, start + length] (log scales map log10 of the value).
  const scale = (kind, [low, high], start, length, flip) => {
    const f = kind === "log" ? Math.log10 : (v) => v;
    const a = f(low), b = f(high);
    return (v) => (flip ? start + length - ((f(v) - a) / (b - a)) * length : start + ((f(v) - a) / (b - a)) * length);
  };

  const style = (spec, index) => {
    const s = spec.style;
    return {
      color: s.colors[index % s.colors.length],
      dash: s.dashes[index % s.dashes.length].map((d) => (d * PT).toFixed(2)).join(" "),
      marker: s.markers[index % s.markers.length],
    };
  };

  // The marker shapes of plotting.MARKERS, as polygons around (0, 0) with radius about 1.
  const SHAPES = {
    s: [[-0.85, -0.85], [0.85, -0.85], [0.85, 0.85], [-0.85, 0.85]],
    "^": [[0, -1.1], [1, 0.75], [-1, 0.75]],
    v: [[0, 1.1], [1, -0.75], [-1, -0.75]],
    D: [[0, -1.1], [0.8, 0], [0, 1.1], [-0.8, 0]],
    P: [[-0.35, -1], [0.35, -1], [0.35, -0.35], [1, -0.35], [1, 0.35], [0.35, 0.35], [0.35, 1], [-0.35, 1],
      [-0.35, 0.35], [-1, 0.35], [-1, -0.35], [-0.35, -0.35]],
    X: [[-0.75, -1], [0, -0.25], [0.75, -1], [1, -0.75], [0.25, 0], [1, 0.75], [0.75, 1], [0, 0.25], [-0.75, 1],
      [-1, 0.75], [-0.25, 0], [-1, -0.75]],
    "*": Array.from({ length: 10 }, (_, i) => {
      const r = i % 2 ? 0.45 : 1.1, a = (Math.PI * i) / 5 - Math.PI / 2;
      return [r * Math.cos(a), r * Math.sin(a)];
    }),
  };
  const marker = (parent, shape, x, y, radius, color) => {
    if (!SHAPES[shape]) return node("circle", { cx: x, cy: y, r: radius, fill: color }, parent);
    const points = SHAPES[shape].map(([a, b]) => `${(x + a * radius).toFixed(2)},${(y + b * radius).toFixed(2)}`);
    return node("polygon", { points: points.join(" "), fill: color }, parent);
  };

  const line = (parent, points, st, width) => node("polyline", {
    points: points.map(([x, y]) => `${x.toFixed(2)},${y.toFixed(2)}`).join(" "),
    fill: "none", stroke: st.color, "stroke-width": (width * PT).toFixed(2), "stroke-dasharray": st.dash,
    "stroke-linejoin": "round",
  }, parent);

  // One series: drawn in a group that records the arrays it drew (see the file's header).
  function drawSeries(g, spec, series, state, frame, sx, sy) {
    const st = style(spec, series.style);
    const width = spec.style.linewidth;
    const x = series.x ? lookup(spec, state, series.x) : null;
    const y = series.y ? lookup(spec, state, series.y) : null;
    const group = node("g", { class: "posenc-series", "data-kind": series.kind }, g);
    if (series.x) { group.dataset.xkey = series.x; group.dataset.x = JSON.stringify(x); }
    if (series.y) { group.dataset.ykey = series.y; group.dataset.y = JSON.stringify(y); }
    if (series.row !== null) group.dataset.row = series.row;
    let empty = false;
    const { left, top, width: w, height: h } = frame;
    if (series.kind === "line" || series.kind === "points") {
      const points = x.map((xi, i) => [sx(xi), sy(y[i])]);
      if (series.kind === "line") line(group, points, st, width);
      if (series.markers || series.kind === "points") {
        const radius = ((series.kind === "points" ? 7 : 3.5) / 2) * PT;
        for (const [px, py] of points) marker(group, st.marker, px, py, radius, st.color);
      }
    } else if (series.kind === "lines") {
      y.forEach((row, i) => line(group, x.map((xi, j) => [sx(xi), sy(row[j])]), style(spec, series.style + i), width));
    } else if (series.kind === "arrow") {
      const [tx, ty] = y[series.row];
      const x0 = sx(0), y0 = sy(0), x1 = sx(tx), y1 = sy(ty);
      const length = Math.hypot(x1 - x0, y1 - y0) || 1;
      const ux = (x1 - x0) / length, uy = (y1 - y0) / length, head = 10, half = 4;
      line(group, [[x0, y0], [x1 - ux * head * 0.8, y1 - uy * head * 0.8]], st, width);
      node("polygon", {
        points: [[x1, y1], [x1 - ux * head - uy * half, y1 - uy * head + ux * half],
          [x1 - ux * head + uy * half, y1 - uy * head - ux * half]].map((p) => p.map((v) => v.toFixed(2)).join(",")).join(" "),
        fill: st.color,
      }, group);
    } else if (series.kind === "hline") {
      for (const v of y) line(group, [[left, sy(v)], [left + w, sy(v)]], st, spec.style.reference_width);
      empty = y.length === 0;
    } else if (series.kind === "vline") {
      for (const v of x) line(group, [[sx(v), top], [sx(v), top + h]], st, spec.style.reference_width);
      empty = x.length === 0;
    }
    return empty; // a reference line with no value here gets no legend entry
  }

  // A legend: one row per entry (or `columns` entries a row), in a corner of the frame or in a row of its own.
  function drawLegend(svg, spec, entries, frame, location, columns) {
    const g = node("g", { class: "posenc-legend" }, svg);
    const back = node("rect", { fill: "white", "fill-opacity": 0.85 }, g);
    const rowHeight = 20, sample = 30, gap = 8, pad = 6;
    const items = entries.map(([series]) => {
      const item = node("g", {}, g);
      const st = style(spec, series.style);
      const reference = series.kind === "hline" || series.kind === "vline";
      if (series.kind !== "points") line(item, [[0, 0], [sample, 0]], st, reference ? spec.style.reference_width : spec.style.linewidth);
      if (series.markers || series.kind === "points") marker(item, st.marker, sample / 2, 0, ((series.kind === "points" ? 7 : 3.5) / 2) * PT, st.color);
      const text = node("text", { x: sample + gap, y: 0, "dominant-baseline": "central", "font-size": FONT.legend }, item, series.label);
      return { item, width: sample + gap + text.getComputedTextLength() };
    });
    const perRow = Math.max(1, columns);
    const colWidth = Math.max(...items.map((i) => i.width)) + 16;
    const rows = Math.ceil(items.length / perRow);
    const width = Math.min(items.length, perRow) * colWidth - 16 + 2 * pad, height = rows * rowHeight + 2 * pad;
    const [vertical, horizontal] = location.split(" ");
    let left = horizontal === "left" ? frame.left + 8 : horizontal === "right" ? frame.left + frame.width - width - 8
      : frame.left + (frame.width - width) / 2;
    let top = vertical === "upper" ? frame.top + 6 : vertical === "lower" ? frame.top + frame.height - height - 6
      : frame.top + (frame.height - height) / 2;
    items.forEach(({ item }, i) => {
      const x = left + pad + (i % perRow) * colWidth, y = top + pad + Math.floor(i / perRow) * rowHeight + rowHeight / 2;
      item.setAttribute("transform", `translate(${x.toFixed(2)},${y.toFixed(2)})`);
    });
    Object.entries({ x: left, y: top, width, height }).forEach(([k, v]) => back.setAttribute(k, v.toFixed(2)));
  }

  function drawPanel(svg, spec, panel, state, box, figureLegend) {
    const g = node("g", { class: "posenc-panel", "data-panel": panel.key }, svg);
    let frame = { left: box.left + MARGIN.left, top: box.top + MARGIN.top,
      width: box.width - MARGIN.left - MARGIN.right, height: box.height - MARGIN.top - MARGIN.bottom };
    const xlim = lookup(spec, state, `${panel.key}:xlim`), ylim = lookup(spec, state, `${panel.key}:ylim`);
    if (panel.equal) { // one unit as long on both axes: shrink the longer side, centred
      const unit = Math.min(frame.width / (xlim[1] - xlim[0]), frame.height / (ylim[1] - ylim[0]));
      const w = unit * (xlim[1] - xlim[0]), h = unit * (ylim[1] - ylim[0]);
      frame = { left: frame.left + (frame.width - w) / 2, top: frame.top + (frame.height - h) / 2, width: w, height: h };
    }
    const { left, top, width, height } = frame;
    const sx = scale(panel.xscale, xlim, left, width, false), sy = scale(panel.yscale, ylim, top, height, true);
    const [xticks, xlabels] = lookup(spec, state, `${panel.key}:xticks`);
    const [yticks, ylabels] = lookup(spec, state, `${panel.key}:yticks`);
    const axes = node("g", { class: "posenc-axes" }, g);
    xticks.forEach((t, i) => {
      const x = sx(t);
      node("line", { x1: x, x2: x, y1: top, y2: top + height, stroke: GRID, "stroke-opacity": 0.5, "stroke-width": 0.8 }, axes);
      node("line", { x1: x, x2: x, y1: top + height, y2: top + height + 5, stroke: "black" }, axes);
      label(axes, xlabels[i], { x, y: top + height + 21, "text-anchor": "middle" });
    });
    yticks.forEach((t, i) => {
      const y = sy(t);
      node("line", { x1: left, x2: left + width, y1: y, y2: y, stroke: GRID, "stroke-opacity": 0.5, "stroke-width": 0.8 }, axes);
      node("line", { x1: left - 5, x2: left, y1: y, y2: y, stroke: "black" }, axes);
      label(axes, ylabels[i], { x: left - 8, y, "text-anchor": "end", "dominant-baseline": "central" });
    });
    node("path", { d: `M${left},${top}V${top + height}H${left + width}`, fill: "none", stroke: "black" }, axes);
    node("text", { x: left + width / 2, y: top + height + 43, "text-anchor": "middle", "font-size": FONT.label }, axes, panel.xlabel);
    node("text", { x: box.left + 14, y: top + height / 2, "text-anchor": "middle", "font-size": FONT.label,
      transform: `rotate(-90 ${box.left + 14} ${top + height / 2})` }, axes, panel.ylabel);
    const title = node("text", { x: left + width / 2, y: top - 10, "text-anchor": "middle", "font-size": FONT.title,
      "font-weight": "bold" }, axes, panel.title);
    const half = title.getComputedTextLength() / 2 + 4; // centred over the axes, but kept inside the panel's box
    title.setAttribute("x", Math.min(Math.max(left + width / 2, box.left + half), box.left + box.width - half).toFixed(2));
    const clip = `posenc-clip-${++clipCount}`;
    node("rect", { x: left, y: top, width, height }, node("clipPath", { id: clip }, g));
    const plot = node("g", { "clip-path": `url(#${clip})` }, g);
    const entries = [];
    for (const series of panel.series) {
      const empty = drawSeries(plot, spec, series, state, frame, sx, sy);
      if (series.label && !empty) entries.push([series]);
    }
    if (panel.legend === "figure") figureLegend.push(...entries);
    else if (panel.legend && entries.length) drawLegend(g, spec, entries, frame, panel.legend, panel.legend_columns);
  }

  function caption(spec, state) {
    return `${spec.title}: ` + spec.controls.map((c) => `${c.label} = ${c.labels[state[c.name]]}`).join(", ");
  }

  // On a narrow screen (a phone) the figure drawn at its notebook size would shrink its text under
  // 8 px: there the panels are stacked (at most two side by side) in a drawing as wide as the screen
  // allows at NARROW_SCALE of its units, so that text stays at least NARROW_SCALE x its size (over 11 px).
  const NARROW_SCALE = 0.95;

  function layout(svg, spec, head, foot) {
    const full = { mosaic: spec.mosaic, width: spec.size[0] * PX, height: spec.size[1] * PX };
    const avail = svg.parentElement ? svg.parentElement.clientWidth : 0;
    if (!avail || avail >= full.width * NARROW_SCALE) return { ...full, narrow: false };
    const width = avail / NARROW_SCALE;
    const rows = spec.mosaic.map((row) => [...new Set(row)]);
    const cols = Math.max(...rows.map((r) => r.length)) > 2 ? 2 : 1;
    const mosaic = rows.flatMap((keys) => {
      const out = [];
      for (let i = 0; i < keys.length; i += cols) {
        const chunk = keys.slice(i, i + cols);
        out.push(chunk.length === cols ? chunk : Array(cols).fill(chunk[0]));
      }
      return out;
    });
    return { mosaic, width, height: head + foot + mosaic.length * width * 0.62, narrow: true };
  }

  function draw(svg, spec, state) {
    svg.replaceChildren();
    const hasFigureLegend = spec.panels.some((p) => p.legend === "figure");
    const foot = hasFigureLegend ? 34 : 0;
    let head = 34;
    const probe = layout(svg, spec, head, foot);
    // a narrow drawing puts the caption's settings on a second line
    if (probe.narrow) head += 20;
    const { mosaic, width, height } = layout(svg, spec, head, foot);
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("aria-label", caption(spec, state));
    node("rect", { x: 0, y: 0, width, height, fill: "white" }, svg);
    const text = caption(spec, state);
    const title = node("text", { x: width / 2, y: 22, "text-anchor": "middle", "font-size": FONT.caption,
      "font-weight": "bold", class: "posenc-caption" }, svg, probe.narrow ? null : text);
    if (probe.narrow) {
      const cut = text.indexOf(": ");
      [text.slice(0, cut + 1), text.slice(cut + 2)].forEach((line, i) =>
        node("tspan", { x: width / 2, dy: i ? 20 : 0 }, title, line));
    }
    const rows = mosaic.length, cols = mosaic[0].length;
    const cellW = width / cols, cellH = (height - head - foot) / rows;
    const figureLegend = [];
    for (const panel of spec.panels) {
      const cells = mosaic.flatMap((row, r) => row.map((key, c) => [key, r, c])).filter(([key]) => key === panel.key);
      const r0 = Math.min(...cells.map((c) => c[1])), r1 = Math.max(...cells.map((c) => c[1]));
      const c0 = Math.min(...cells.map((c) => c[2])), c1 = Math.max(...cells.map((c) => c[2]));
      const box = { left: c0 * cellW, top: head + r0 * cellH, width: (c1 - c0 + 1) * cellW, height: (r1 - r0 + 1) * cellH };
      drawPanel(svg, spec, panel, state, box, figureLegend);
    }
    if (figureLegend.length) {
      drawLegend(svg, spec, figureLegend, { left: 0, top: height - foot, width, height: foot }, "center center",
        figureLegend.length);
    }
  }

  function build(container, spec) {
    const state = Object.fromEntries(spec.controls.map((c) => [c.name, c.default]));
    const form = document.createElement("form");
    form.className = "posenc-explorer-controls";
    form.addEventListener("submit", (event) => event.preventDefault());
    const svg = node("svg", { class: "posenc-explorer-figure", role: "img", "font-family": "DejaVu Sans, Verdana, sans-serif" });
    for (const control of spec.controls) {
      const field = document.createElement("label");
      field.className = "posenc-explorer-control";
      const name = document.createElement("span");
      name.textContent = control.label;
      field.appendChild(name);
      let input;
      if (control.kind === "menu") {
        input = document.createElement("select");
        control.labels.forEach((text, i) => input.appendChild(new Option(text, String(i))));
      } else {
        input = document.createElement("input");
        Object.assign(input, { type: "range", min: "0", max: String(control.options.length - 1), step: "1" });
      }
      input.name = control.name;
      input.value = String(control.default);
      field.appendChild(input);
      const shown = document.createElement("output");
      shown.textContent = control.labels[control.default];
      if (control.kind !== "menu") field.appendChild(shown);
      input.addEventListener("input", () => {
        state[control.name] = Number(input.value);
        shown.textContent = control.labels[state[control.name]];
        draw(svg, spec, state);
      });
      form.appendChild(field);
    }
    container.replaceChildren(form, svg);
    container.hidden = false;
    // The notebook's static figure (the default setting) stays for print; on screen this one replaces it.
    container.closest("div.cell_output")?.classList.add("posenc-explorer-live");
    draw(svg, spec, state);
    // a phone turned, a window resized: the drawing follows the width it has (see layout)
    let seen = container.clientWidth;
    new ResizeObserver(() => {
      if (container.clientWidth && container.clientWidth !== seen) { seen = container.clientWidth; draw(svg, spec, state); }
    }).observe(container);
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const container of document.querySelectorAll("div.posenc-explorer[data-explorer]")) {
      const spec = (window.POSENC_EXPLORERS || {})[container.dataset.explorer];
      if (spec) build(container, spec);
    }
  });
})();
