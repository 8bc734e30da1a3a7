/* livecontext trace page.
 *
 * Reads the trace embedded in #trace-data (the data contract of livecontext.actors.trace,
 * version 1) and draws: the header, a timeline (the engine's states, the marks, the model
 * calls), a sequence diagram of the messages and a list of the model calls with the context
 * each was given. Vanilla JS and nothing fetched: the page works offline.
 *
 * The diagram is virtualised: one row per message or mark, and only the rows in view (plus
 * a few) are in the DOM, redrawn on scroll, so a thread of 20,000 records stays responsive.
 * When the first screen is drawn the page sets window.traceReady (and traceReadyAt, the
 * milliseconds since navigation started) for tests and for whoever wants to measure it.
 */
(() => {
  "use strict";
  performance.mark("trace-script");

  const ROW_H = 24;          // a diagram row: one message or mark
  const GUTTER = 124;        // seq and time, left of the columns
  const SUMMARY_MIN = 260;   // the summaries, right of the columns: at least this wide
  const OVERSCAN = 10;       // rows drawn beyond the view, so a short scroll shows no gap
  const CALL_H = 40;         // a row of the model calls list
  const TL_LABEL = 92;       // the timeline's lane labels
  const SVGNS = "http://www.w3.org/2000/svg";  // a namespace name, never fetched

  const ROLE_COLOURS = {
    engine: "#2563eb", history: "#7c3aed", apps: "#059669", input: "#d97706", recap: "#db2777",
    analyzer: "#0891b2", model: "#dc2626", agent: "#4f46e5", system: "#475569", other: "#6b7280",
  };
  const STATES = ["WaitingInput", "PendingInput", "WaitingToolResults", "ToolResultsReady", "PendingToolResults"];
  const STATE_COLOURS = {
    WaitingInput: "#cbd5e1", PendingInput: "#f59e0b", WaitingToolResults: "#8b5cf6",
    ToolResultsReady: "#10b981", PendingToolResults: "#3b82f6",
  };
  const LEVELS = ["live", "recent", "gist", "recap"];
  const LEVEL_COLOURS = { live: "#1d4ed8", recent: "#60a5fa", gist: "#a78bfa", recap: "#f472b6" };
  const MARK_TYPES = ["fold", "notification", "edit", "denial", "pause", "failure"];
  const MARK_COLOURS = {
    fold: "#db2777", notification: "#0891b2", edit: "#d97706", denial: "#dc2626", pause: "#64748b", failure: "#991b1b",
  };
  const MODES = ["ask", "reply", "tell", "publish"];

  // ---------------------------------------------------------------- helpers

  const $ = (id) => document.getElementById(id);
  const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
  const fmtInt = (n) => Number(n).toLocaleString("en-US");
  const fmtT = (t) => Number(t).toFixed(3) + " s";
  const clip = (s, n) => (s.length > n ? s.slice(0, Math.max(0, n - 1)) + "…" : s);
  const colourOf = (map, key, fallback) => (Object.prototype.hasOwnProperty.call(map, key) ? map[key] : fallback);

  function fmtDur(d) {
    if (!(d > 0)) return "0 ms";
    if (d < 0.001) return "<1 ms";
    if (d < 1) return Math.round(d * 1000) + " ms";
    if (d < 60) return d.toFixed(d < 10 ? 2 : 1) + " s";
    if (d < 3600) { const m = Math.floor(d / 60); return m + " min " + Math.floor(d - 60 * m) + " s"; }
    const hours = Math.floor(d / 3600);
    return hours + " h " + Math.floor((d - 3600 * hours) / 60) + " min";
  }

  /** An element with attributes and children (strings become text: never parsed as HTML). */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "style") node.style.cssText = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  /** The first index in [0, n) for which pred holds, pred being false then true. */
  function bisect(n, pred) {
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pred(mid)) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  // ---------------------------------------------------------------- the data

  const data = JSON.parse($("trace-data").textContent);
  performance.mark("trace-parsed");
  const messages = data.messages || [];
  const marks = data.marks || [];
  const states = data.states || [];
  const calls = data.model_calls || [];
  const texts = data.texts || {};
  const duration = data.duration > 0 ? data.duration : 0;
  const span = duration > 0 ? duration : 1;  // the timeline's scale when nothing took time

  // the columns: the data's actors, then any id a message names that is not among them
  const actors = (data.actors || []).map((a) => ({ id: a.id, role: a.role || "other", label: a.label || a.id }));
  const actorIx = new Map(actors.map((a, k) => [a.id, k]));
  function actorOf(id) {
    let k = actorIx.get(id);
    if (k === undefined) {
      k = actors.length;
      actors.push({ id, role: "other", label: id });
      actorIx.set(id, k);
    }
    return k;
  }
  const mFrom = new Int32Array(messages.length);
  const mTo = new Int32Array(messages.length);
  messages.forEach((m, k) => { mFrom[k] = actorOf(m.from); mTo[k] = actorOf(m.to); });
  const markAuthor = new Int32Array(marks.length);
  marks.forEach((k, j) => { const a = actorIx.get(k.author); markAuthor[j] = a === undefined ? -1 : a; });
  const roleColour = (a) => colourOf(ROLE_COLOURS, actors[a].role, ROLE_COLOURS.other);

  // the rows of the diagram: messages and marks by seq; a mark follows the messages of its seq
  const nRows = messages.length + marks.length;
  const rowIsMark = new Uint8Array(nRows);
  const rowRef = new Int32Array(nRows);
  const markRow = new Int32Array(marks.length);
  const msgRow = new Int32Array(messages.length);
  {
    let i = 0, j = 0;
    for (let r = 0; r < nRows; r++) {
      if (j >= marks.length || (i < messages.length && messages[i].seq <= marks[j].seq)) {
        rowRef[r] = i; msgRow[i] = r; i++;
      } else {
        rowIsMark[r] = 1; rowRef[r] = j; markRow[j] = r; j++;
      }
    }
  }
  const rowItem = (r) => (rowIsMark[r] ? marks[rowRef[r]] : messages[rowRef[r]]);

  // kinds: message kinds (most frequent first), then mark types; the kind filter's entries
  const kindKeys = [];
  const kindIx = new Map();
  const rowKind = new Int32Array(nRows);
  {
    const counts = new Map();
    for (const m of messages) counts.set(m.kind, (counts.get(m.kind) || 0) + 1);
    const msgKinds = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || (a < b ? -1 : 1));
    for (const kind of msgKinds) { kindIx.set("m:" + kind, kindKeys.length); kindKeys.push({ key: "m:" + kind, name: kind, mark: false }); }
    const types = [...new Set(marks.map((k) => k.type))].sort((a, b) => {
      const ia = MARK_TYPES.indexOf(a), ib = MARK_TYPES.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : 1);
    });
    for (const type of types) { kindIx.set("k:" + type, kindKeys.length); kindKeys.push({ key: "k:" + type, name: type, mark: true }); }
    for (let r = 0; r < nRows; r++) {
      const item = rowItem(r);
      rowKind[r] = kindIx.get(rowIsMark[r] ? "k:" + item.type : "m:" + item.kind);
    }
  }

  const msgByI = new Map();
  messages.forEach((m, k) => msgByI.set(m.i, k));
  let repliesTo = null;  // message index -> indices of its replies; built on first need
  function repliesOf(k) {
    if (repliesTo === null) {
      repliesTo = new Map();
      messages.forEach((m, j) => {
        if (m.reply_to === null || m.reply_to === undefined) return;
        const asked = msgByI.get(m.reply_to);
        if (asked === undefined) return;
        if (!repliesTo.has(asked)) repliesTo.set(asked, []);
        repliesTo.get(asked).push(j);
      });
    }
    return repliesTo.get(k) || [];
  }
  const callBySeq = new Map();
  calls.forEach((c, n) => { if (!callBySeq.has(c.seq)) callBySeq.set(c.seq, n); });

  /** The model call a message belongs to: to or from a model, at the call's seq or answering it. */
  function callOfMessage(k) {
    const m = messages[k];
    if (actors[mFrom[k]].role !== "model" && actors[mTo[k]].role !== "model") return -1;
    if (callBySeq.has(m.seq)) return callBySeq.get(m.seq);
    for (const j of repliesOf(k)) if (callBySeq.has(messages[j].seq)) return callBySeq.get(messages[j].seq);
    const asked = m.reply_to === null || m.reply_to === undefined ? undefined : msgByI.get(m.reply_to);
    if (asked !== undefined && callBySeq.has(messages[asked].seq)) return callBySeq.get(messages[asked].seq);
    return -1;
  }

  /** The engine's state at a seq: the last state that began at or before it (-1: none yet). */
  function stateAtSeq(seq) {
    return bisect(states.length, (s) => states[s].seq0 > seq) - 1;
  }

  // ---------------------------------------------------------------- elements and view state

  const el = {
    title: $("trace-title"), stats: $("trace-stats"), search: $("search"),
    actorFilter: $("actor-filter"), kindFilter: $("kind-filter"), tFrom: $("t-from"), tTo: $("t-to"),
    reset: $("reset"), shownCount: $("shown-count"), legend: $("legend"), tlViewport: $("tl-viewport"), tlBrush: $("tl-brush"),
    timeline: $("timeline-canvas"), stateLegend: $("state-legend"),
    scroll: $("diagram-scroll"), head: $("diagram-head"), body: $("diagram-body"), svg: $("diagram-svg"),
    empty: $("diagram-empty"), callsCount: $("calls-count"), callsScroll: $("calls-scroll"),
    callsBody: $("calls-body"), details: $("details"), tooltip: $("tooltip"),
  };

  el.gutterHead = h("span", { class: "gutter-head", style: `left:0;width:${GUTTER}px` }, "seq · time");
  const filter = { q: "", hiddenActors: new Set(), hiddenKinds: new Set(), t0: -Infinity, t1: Infinity };
  let shown = new Int32Array(0);       // the rows that pass the filters, in order
  let shownCalls = [];                 // the model calls in the time range
  let hay = null;                      // each row's searchable text, lower case; built on first search
  let colX = new Float64Array(0);      // a shown actor's column centre (NaN: hidden)
  let colW = 140;
  let summaryW = SUMMARY_MIN;
  let totalW = 0;
  let selected = null;                 // {what: "row"|"call"|"state", index}
  const facetCounts = { actors: new Int32Array(actors.length), kinds: new Int32Array(kindKeys.length) };
  const facetNodes = { actors: [], kinds: [] };

  // ---------------------------------------------------------------- header and legend

  function drawHeader() {
    el.title.textContent = "Trace of thread " + (data.thread ?? "?") + (data.system ? " · system " + data.system : "");
    const first = nRows ? rowItem(0).seq : null;
    const stats = [
      ["seq", first === null ? "none" : first + "–" + (data.last_seq ?? rowItem(nRows - 1).seq)],
      ["duration", fmtDur(duration)],
      ["started", data.started_at || "?"],
      ["records", fmtInt(data.counts?.records ?? nRows)],
      ["messages", fmtInt(messages.length)],
      ["model calls", fmtInt(calls.length)],
      ["actors", fmtInt(actors.length)],
      ["marks", fmtInt(marks.length)],
      ["budget", data.budget ? fmtInt(data.budget) + " tokens" : "none"],
    ];
    el.stats.replaceChildren(...stats.map(([name, value]) =>
      h("span", { class: "stat", "data-testid": "stat-" + name.replace(" ", "-") }, name + " ", h("b", {}, value))));
    if (data.at !== null && data.at !== undefined) {
      el.stats.append(h("span", { class: "stat warn", "data-testid": "stat-at" }, "stopped at seq ", h("b", {}, String(data.at))));
    }
  }

  function arrowSvg(mode, x1, x2, y, colour) {
    const d = x2 >= x1 ? 1 : -1;
    const tip = x2 - d * 2;
    const dash = mode === "reply" ? ' stroke-dasharray="5 3"' : "";
    const width = mode === "publish" ? 3 : 1.4;
    let out = `<line x1="${x1}" y1="${y}" x2="${tip - d * (mode === "reply" || mode === "tell" ? 1 : 6)}" y2="${y}" stroke="${colour}" stroke-width="${width}"${dash}${mode === "publish" ? ' stroke-opacity="0.6"' : ""}/>`;
    const back = tip - d * 8;
    if (mode === "reply" || mode === "tell") {
      out += `<polyline points="${back},${y - 4} ${tip},${y} ${back},${y + 4}" fill="none" stroke="${colour}" stroke-width="1.4"/>`;
    } else {
      out += `<path d="M${tip},${y} L${back},${y - 4.5} L${back},${y + 4.5} Z" fill="${colour}"/>`;
    }
    if (mode === "publish") out += `<circle cx="${x1}" cy="${y}" r="3.5" fill="${colour}"/>`;
    return out;
  }

  function selfArrowSvg(mode, x, y, colour) {
    const dash = mode === "reply" ? ' stroke-dasharray="4 2"' : "";
    return `<path d="M${x},${y - 6} h16 v10 h-13" fill="none" stroke="${colour}" stroke-width="${mode === "publish" ? 2.5 : 1.4}"${dash}/>` +
      `<path d="M${x + 1},${y + 4} l6,-3.5 v7 Z" fill="${colour}"/>`;
  }

  /** A mark's shape at (x, y): SVG path data (shared by the diagram, the legend and the
   * timeline's canvas) and whether it is stroked rather than filled. */
  function markShape(type, x, y) {
    switch (type) {
      case "fold": return [`M${x - 5},${y - 4} L${x + 5},${y - 4} L${x},${y + 4} Z`, false];
      case "notification": return [`M${x - 4.2},${y} a4.2,4.2 0 1,0 8.4,0 a4.2,4.2 0 1,0 -8.4,0 Z`, false];
      case "edit": return [`M${x},${y - 5} L${x + 5},${y} L${x},${y + 5} L${x - 5},${y} Z`, false];
      case "denial": return [`M${x - 4},${y - 4} L${x + 4},${y + 4} M${x + 4},${y - 4} L${x - 4},${y + 4}`, true];
      case "pause": return [`M${x - 4},${y - 4.5} h3 v9 h-3 Z M${x + 1},${y - 4.5} h3 v9 h-3 Z`, false];
      case "failure": return [`M${x},${y - 5.5} L${x + 5.5},${y + 4.5} L${x - 5.5},${y + 4.5} Z`, false];
      default: return [`M${x - 4},${y - 4} h8 v8 h-8 Z`, false];
    }
  }

  function markShapeSvg(type, x, y) {
    const [d, stroked] = markShape(type, x, y), c = colourOf(MARK_COLOURS, type, "#334155");
    return stroked ? `<path d="${d}" stroke="${c}" stroke-width="2.4" fill="none"/>` : `<path d="${d}" fill="${c}"/>`;
  }

  function paintShape(ctx, type, x, y) {
    const [d, stroked] = markShape(type, x, y), path = new Path2D(d), c = colourOf(MARK_COLOURS, type, "#334155");
    if (stroked) { ctx.strokeStyle = c; ctx.lineWidth = 2.4; ctx.stroke(path); } else { ctx.fillStyle = c; ctx.fill(path); }
  }

  function drawLegend() {
    const item = (svg, label) => {
      const span = h("span", {}, label);
      const icon = document.createElementNS(SVGNS, "svg");
      icon.setAttribute("width", "34"); icon.setAttribute("height", "12");
      icon.innerHTML = svg;
      span.prepend(icon);
      return span;
    };
    el.legend.replaceChildren(
      ...MODES.map((mode) => item(arrowSvg(mode, 4, 32, 6, "#334155"), mode)),
      ...MARK_TYPES.map((type) => item(markShapeSvg(type, 17, 6), type)));
  }

  // ---------------------------------------------------------------- filters

  function facet(name, colour, onChange, testid, value) {
    const box = h("input", { type: "checkbox", checked: true, "data-testid": testid, "data-value": value, onchange: onChange });
    const count = h("span", { class: "count" }, "0");
    const row = h("label", { class: "facet" }, box, h("span", { class: "swatch", style: "background:" + colour }), h("span", { class: "name" }, name), count);
    return { row, box, count };
  }

  function setAll(kind, visible) {
    if (kind === "actors") {
      filter.hiddenActors = visible ? new Set() : new Set(actors.map((a, k) => k));
    } else {
      filter.hiddenKinds = visible ? new Set() : new Set(kindKeys.map((k, j) => j));
    }
    applyFilters({ columns: kind === "actors" });
  }

  function buildFilters() {
    const actorBody = el.actorFilter.querySelector(".filter-body");
    const actorActions = h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => setAll("actors", true) }, "all"),
      h("button", { type: "button", onclick: () => setAll("actors", false) }, "none"));
    facetNodes.actors = actors.map((a, k) => facet(a.label + (a.label !== a.id ? "  (" + a.id + ")" : ""), roleColour(k), (ev) => {
      if (ev.target.checked) filter.hiddenActors.delete(k); else filter.hiddenActors.add(k);
      applyFilters({ columns: true });
    }, "actor-toggle", a.id));
    actorBody.replaceChildren(actorActions, ...facetNodes.actors.map((f) => f.row));

    const kindBody = el.kindFilter.querySelector(".filter-body");
    const kindActions = h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => setAll("kinds", true) }, "all"),
      h("button", { type: "button", onclick: () => setAll("kinds", false) }, "none"));
    facetNodes.kinds = kindKeys.map((k, j) => facet(k.name, k.mark ? colourOf(MARK_COLOURS, k.name, "#334155") : "#94a3b8", (ev) => {
      if (ev.target.checked) filter.hiddenKinds.delete(j); else filter.hiddenKinds.add(j);
      applyFilters({});
    }, "kind-toggle", k.key));
    const msgFacets = facetNodes.kinds.filter((f, j) => !kindKeys[j].mark).map((f) => f.row);
    const markFacets = facetNodes.kinds.filter((f, j) => kindKeys[j].mark).map((f) => f.row);
    kindBody.replaceChildren(kindActions,
      h("h3", {}, "messages"), ...msgFacets, markFacets.length ? h("h3", {}, "marks") : null, ...markFacets);

    let typing = 0;
    el.search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { filter.q = el.search.value.trim().toLowerCase(); applyFilters({}); }, 120);
    });
    const onRange = () => {
      const a = parseFloat(el.tFrom.value), b = parseFloat(el.tTo.value);
      filter.t0 = Number.isFinite(a) ? a : -Infinity;
      filter.t1 = Number.isFinite(b) ? b : Infinity;
      applyFilters({ range: true });
    };
    el.tFrom.addEventListener("change", onRange);
    el.tTo.addEventListener("change", onRange);
    el.reset.addEventListener("click", () => {
      el.search.value = ""; el.tFrom.value = ""; el.tTo.value = "";
      Object.assign(filter, { q: "", hiddenActors: new Set(), hiddenKinds: new Set(), t0: -Infinity, t1: Infinity });
      applyFilters({ columns: true, range: true });
    });
  }

  function setTimeRange(t0, t1) {
    el.tFrom.value = t0.toFixed(3);
    el.tTo.value = t1.toFixed(3);
    filter.t0 = t0; filter.t1 = t1;
    applyFilters({ range: true });
  }

  function buildHay() {
    hay = new Array(nRows);
    for (let r = 0; r < nRows; r++) {
      const item = rowItem(r);
      hay[r] = rowIsMark[r]
        ? (item.type + "\n" + (item.summary || "") + "\n" + (item.author || "")).toLowerCase()
        : (item.kind + "\n" + (item.summary || "")).toLowerCase();
    }
  }

  /** Recompute the shown rows and the filters' counts, then redraw what depends on them. */
  function applyFilters(changed) {
    if (filter.q && hay === null) buildHay();
    const q = filter.q, t0 = filter.t0, t1 = filter.t1;
    const hiddenA = filter.hiddenActors, hiddenK = filter.hiddenKinds;
    const aCounts = facetCounts.actors, kCounts = facetCounts.kinds;
    aCounts.fill(0); kCounts.fill(0);
    const out = new Int32Array(nRows);
    let n = 0, shownMsgs = 0;
    for (let r = 0; r < nRows; r++) {
      const item = rowItem(r);
      if (item.t < t0 || item.t > t1) continue;
      if (q && !hay[r].includes(q)) continue;
      const kindOk = !hiddenK.has(rowKind[r]);
      let actorOk;
      if (rowIsMark[r]) {
        const a = markAuthor[rowRef[r]];
        actorOk = a < 0 || !hiddenA.has(a);
        if (kindOk && a >= 0) aCounts[a]++;
      } else {
        const k = rowRef[r];
        actorOk = !hiddenA.has(mFrom[k]) && !hiddenA.has(mTo[k]);
        if (kindOk) { aCounts[mFrom[k]]++; if (mTo[k] !== mFrom[k]) aCounts[mTo[k]]++; }
      }
      if (actorOk) kCounts[rowKind[r]]++;
      if (actorOk && kindOk) { out[n++] = r; if (!rowIsMark[r]) shownMsgs++; }
    }
    shown = out.subarray(0, n);
    for (let k = 0; k < actors.length; k++) updateFacet(facetNodes.actors[k], aCounts[k], !hiddenA.has(k));
    for (let j = 0; j < kindKeys.length; j++) updateFacet(facetNodes.kinds[j], kCounts[j], !hiddenK.has(j));
    el.actorFilter.querySelector("summary").textContent = "Actors " + (actors.length - hiddenA.size) + "/" + actors.length;
    el.kindFilter.querySelector("summary").textContent = "Kinds " + (kindKeys.length - hiddenK.size) + "/" + kindKeys.length;
    el.shownCount.textContent = fmtInt(shownMsgs) + " of " + fmtInt(messages.length) + " messages, " +
      fmtInt(n - shownMsgs) + " of " + fmtInt(marks.length) + " marks";
    el.shownCount.dataset.shown = String(n);
    el.shownCount.dataset.total = String(nRows);
    el.shownCount.dataset.messages = String(shownMsgs);
    if (changed.columns) layoutColumns();
    if (changed.range) { filterCalls(); drawTimeline(); }
    el.scroll.scrollTop = Math.min(el.scroll.scrollTop, Math.max(0, n * ROW_H - el.scroll.clientHeight));
    drawDiagram();
  }

  function updateFacet(node, count, checked) {
    node.count.textContent = fmtInt(count);
    node.box.checked = checked;
    node.row.classList.toggle("empty", count === 0);
  }

  // ---------------------------------------------------------------- sequence diagram

  function layoutColumns() {
    const visible = [];
    for (let k = 0; k < actors.length; k++) if (!filter.hiddenActors.has(k)) visible.push(k);
    const width = el.scroll.clientWidth;
    colW = Math.max(80, Math.min(210, visible.length ? (width - GUTTER - SUMMARY_MIN) / visible.length : 210));
    summaryW = Math.max(SUMMARY_MIN, width - GUTTER - visible.length * colW);
    totalW = GUTTER + visible.length * colW + summaryW;
    colX = new Float64Array(actors.length).fill(NaN);
    visible.forEach((k, c) => { colX[k] = GUTTER + c * colW + colW / 2; });
    el.head.style.width = totalW + "px";
    el.body.style.width = totalW + "px";
    el.head.replaceChildren(
      el.gutterHead,
      ...visible.map((k) => h("div", {
        class: "col-head", "data-testid": "actor", "data-actor": actors[k].id, "data-role": actors[k].role,
        title: actors[k].id + " (" + actors[k].role + ")",
        style: `left:${colX[k] - colW / 2 + 4}px;width:${colW - 8}px;border-top-color:${roleColour(k)}`,
      }, h("span", { class: "label" }, actors[k].label), h("span", { class: "role" }, actors[k].role))),
      h("span", { class: "summary-head", style: `left:${totalW - summaryW + 10}px` }, "summary"));
  }

  /** The rows [first, last) of a virtual list (n rows of rowH pixels) in its scroller's view. */
  function inView(scroller, rowH, n) {
    const top = scroller.scrollTop, view = scroller.clientHeight || 300;
    return [Math.min(n, Math.floor(top / rowH)), Math.min(n, Math.ceil((top + view) / rowH))];
  }

  /** A virtual list's scroll handler: once a frame, redraw only when the rows in view are no
   * longer all in the DOM, so a small or sideways scroll keeps the same nodes (and what the
   * pointer is over); otherwise call ``moved``. */
  function onScroll(scroller, rowH, count, drawn, draw, moved) {
    let pending = false;
    return () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        const [a, b] = inView(scroller, rowH, count());
        if (a < drawn.first || b > drawn.last) draw(); else moved(a, b);
      });
    };
  }

  const drawn = { first: 0, last: 0 };       // the diagram's rows in the DOM (shown positions)
  const callsDrawn = { first: 0, last: 0 };  // the model calls' rows in the DOM
  const visibleRows = () => inView(el.scroll, ROW_H, shown.length);
  const scheduleDraw = onScroll(el.scroll, ROW_H, () => shown.length, drawn, () => drawDiagram(), (a, b) => {
    drawViewport(a, b);
    const gutter = $("gutter");
    if (gutter) gutter.setAttribute("transform", `translate(${el.scroll.scrollLeft},0)`);
    el.gutterHead.style.left = el.scroll.scrollLeft + "px";
  });

  function drawDiagram() {
    const n = shown.length;
    el.body.style.height = n * ROW_H + "px";
    el.empty.hidden = n > 0;
    if (n === 0) {
      el.empty.textContent = nRows === 0 ? "This trace has no messages." : "No message or mark matches the filters.";
    }
    const [firstVisible, lastVisible] = visibleRows();
    const first = Math.max(0, firstVisible - OVERSCAN);
    const last = Math.min(n, lastVisible + OVERSCAN);
    Object.assign(drawn, { first, last });
    const height = (last - first) * ROW_H;
    el.svg.setAttribute("width", String(totalW));
    el.svg.setAttribute("height", String(Math.max(height, 1)));
    el.svg.style.top = first * ROW_H + "px";
    const out = [];
    for (let k = 0; k < actors.length; k++) {
      if (Number.isNaN(colX[k])) continue;
      out.push(`<line class="life" x1="${colX[k]}" y1="0" x2="${colX[k]}" y2="${height}"/>`);
    }
    const sel = selected && selected.what === "row" ? selected.index : -1;
    const related = new Set();
    if (sel >= 0 && !rowIsMark[sel]) {
      const m = messages[rowRef[sel]];
      const asked = m.reply_to === null || m.reply_to === undefined ? undefined : msgByI.get(m.reply_to);
      if (asked !== undefined) related.add(msgRow[asked]);
      for (const j of repliesOf(rowRef[sel])) related.add(msgRow[j]);
    }
    // a selected model call or state lights up its rows: those of its seq, or of its span
    const [relSeq0, relSeq1] = !selected ? [1, 0] : selected.what === "call" ? [calls[selected.index].seq, calls[selected.index].seq] :
      selected.what === "state" ? [states[selected.index].seq0, Math.max(states[selected.index].seq0, states[selected.index].seq1 - 1)] : [1, 0];
    const sumX = totalW - summaryW + 10;
    const gutter = [];
    const sumChars = Math.floor((summaryW - 16) / 6.2);
    for (let p = first; p < last; p++) {
      const r = shown[p];
      const y = (p - first) * ROW_H;
      const item = rowItem(r);
      const cls = (r === sel ? " sel" : "") + (related.has(r) || (item.seq >= relSeq0 && item.seq <= relSeq1) ? " rel" : "");
      const st = stateAtSeq(item.seq);
      const stColour = st >= 0 ? colourOf(STATE_COLOURS, states[st].state, "#e5e7eb") : "#f1f5f9";
      gutter.push(`<g class="grow${cls}" data-r="${r}"><rect class="ghit" x="0" y="${y}" width="${GUTTER}" height="${ROW_H}"/>` +
        `<rect x="2" y="${y}" width="5" height="${ROW_H}" fill="${stColour}"/>` +
        `<text class="seq" x="58" y="${y + 16}" text-anchor="end">#${item.seq}</text>` +
        `<text class="time" x="${GUTTER - 8}" y="${y + 16}" text-anchor="end">${item.t.toFixed(3)}</text></g>`);
      if (rowIsMark[r]) {
        const j = rowRef[r];
        const c = colourOf(MARK_COLOURS, item.type, "#334155");
        const a = markAuthor[j];
        const x = a >= 0 && !Number.isNaN(colX[a]) ? colX[a] : GUTTER + 12;
        const label = item.type + " · " + (item.author || "?") + " — " + (item.summary || "");
        out.push(`<g class="row mark${cls}" data-testid="mark-row" data-r="${r}" data-seq="${item.seq}" data-type="${esc(item.type)}">` +
          `<rect class="hit" x="0" y="${y}" width="${totalW}" height="${ROW_H}"/>` +
          `<rect class="band" x="${GUTTER}" y="${y + 2}" width="${totalW - GUTTER}" height="${ROW_H - 4}" fill="${c}"/>` +
          markShapeSvg(item.type, x, y + 12) +
          `<text class="marktext" x="${x + 10}" y="${y + 16}" fill="${c}">${esc(clip(label, Math.floor((totalW - x - 20) / 6.4)))}</text></g>`);
      } else {
        const k = rowRef[r];
        const x1 = colX[mFrom[k]], x2 = colX[mTo[k]];
        const colour = roleColour(mFrom[k]);
        const ay = y + 16;
        const arrow = mFrom[k] === mTo[k] ? selfArrowSvg(item.mode, x1, ay, colour) : arrowSvg(item.mode, x1, x2, ay, colour);
        const mid = mFrom[k] === mTo[k] ? x1 + 20 : (x1 + x2) / 2;
        const room = Math.max(Math.abs(x2 - x1), colW) - 8;
        out.push(`<g class="row msg${cls}" data-testid="message" data-r="${r}" data-seq="${item.seq}" data-i="${item.i}" data-mode="${esc(item.mode)}">` +
          `<rect class="hit" x="0" y="${y}" width="${totalW}" height="${ROW_H}"/>` + arrow +
          `<text class="kind" x="${mid}" y="${y + 10}" text-anchor="${mFrom[k] === mTo[k] ? "start" : "middle"}">${esc(clip(item.kind, Math.floor(room / 5.6)))}</text>` +
          `<text class="sum" x="${sumX}" y="${y + 16}">${esc(clip(item.summary || "", sumChars))}</text></g>`);
      }
    }
    // the gutter (seq and time) stays at the left edge when the columns scroll sideways
    out.push(`<g id="gutter" transform="translate(${el.scroll.scrollLeft},0)">${gutter.join("")}</g>`);
    el.gutterHead.style.left = el.scroll.scrollLeft + "px";
    el.svg.innerHTML = out.join("");
    drawViewport(firstVisible, lastVisible);
  }

  /** Scroll the diagram so shown position p sits a third of the way down the view. */
  function scrollToPosition(p) {
    el.scroll.scrollTop = Math.max(0, p * ROW_H - el.scroll.clientHeight / 3);
    scheduleDraw();
  }

  function scrollToRow(r) {
    if (r >= 0 && shown.length) scrollToPosition(Math.min(shown.length - 1, bisect(shown.length, (p) => shown[p] >= r)));
  }

  function scrollToTime(t) {
    scrollToPosition(Math.min(shown.length - 1, bisect(shown.length, (p) => rowItem(shown[p]).t >= t)));
  }

  function ensureRowVisible(p) {
    const y = p * ROW_H, top = el.scroll.scrollTop, view = el.scroll.clientHeight - 44;
    if (y < top) el.scroll.scrollTop = y;
    else if (y + ROW_H > top + view) el.scroll.scrollTop = y + ROW_H - view;
  }

  // ---------------------------------------------------------------- timeline

  // A canvas: thousands of states and marks cost a few milliseconds to paint there, where as
  // SVG nodes they took a quarter of a second to lay out. What is under the pointer is found
  // from the time it points at (binary search), not from nodes.
  const TL = { height: 92, right: 14, axis: 12, state: [18, 18], marks: [44, 16], calls: [66, 22] };
  let tlWidth = 0;
  let view0 = 0, view1 = span;  // the time the timeline shows: the time filter's range, else all
  const tlInner = () => Math.max(1, tlWidth - TL_LABEL - TL.right);
  const tlX = (t) => TL_LABEL + ((t - view0) / (view1 - view0)) * tlInner();
  const tlT = (x) => Math.max(view0, Math.min(view1, view0 + ((x - TL_LABEL) / tlInner()) * (view1 - view0)));

  function timelineView() {
    view0 = Number.isFinite(filter.t0) ? Math.max(0, filter.t0) : 0;
    view1 = Number.isFinite(filter.t1) ? Math.min(duration, filter.t1) : duration;
    if (!(view1 > view0)) { view0 = Math.max(0, view0 - 0.0005); view1 = view0 + (duration > 0 ? 0.001 : 1); }
  }

  function niceStep(range, ticks) {
    const raw = range / ticks, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const f of [1, 2, 5, 10]) if (raw <= f * mag) return f * mag;
    return 10 * mag;
  }

  function drawTimeline() {
    timelineView();
    const canvas = el.timeline, dpr = window.devicePixelRatio || 1;
    tlWidth = canvas.clientWidth || 800;
    canvas.width = Math.round(tlWidth * dpr);
    canvas.height = Math.round(TL.height * dpr);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, tlWidth, TL.height);
    const [sy, sh] = TL.state, [my, mh] = TL.marks, [cy, ch] = TL.calls;
    const right = tlWidth - TL.right;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#64748b";
    ctx.fillText("engine state", 8, sy + 13);
    ctx.fillText("marks", 8, my + 12);
    ctx.fillText("model calls", 8, cy + 15);
    ctx.font = "10px ui-monospace, monospace";
    const step = niceStep(view1 - view0, Math.max(2, Math.floor(tlInner() / 110)));
    for (let t = Math.ceil(view0 / step - 1e-9) * step; t <= view1 + 1e-9; t += step) {
      const x = Math.round(tlX(t)) + 0.5;
      ctx.fillStyle = "#e2e8f0";
      ctx.fillRect(x, TL.axis, 1, cy + ch - TL.axis);
      ctx.fillStyle = "#64748b";
      ctx.fillText(t === 0 ? "0" : fmtDur(t), x + 2, 10);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(TL_LABEL, 0, right - TL_LABEL + 7, TL.height);
    ctx.clip();
    for (let s = bisect(states.length, (k) => states[k].t1 >= view0); s < states.length && states[s].t0 <= view1; s++) {
      const x0 = tlX(states[s].t0), x1 = tlX(Math.max(states[s].t1, states[s].t0));
      ctx.fillStyle = colourOf(STATE_COLOURS, states[s].state, "#e5e7eb");
      ctx.fillRect(x0, sy, Math.max(0.75, x1 - x0), sh);
    }
    for (let j = bisect(marks.length, (k) => marks[k].t >= view0); j < marks.length && marks[j].t <= view1; j++) {
      paintShape(ctx, marks[j].type, tlX(marks[j].t), my + mh / 2);
    }
    const scale = callScale();
    for (let n = bisect(calls.length, (k) => calls[k].t >= view0); n < calls.length && calls[n].t <= view1; n++) {
      const c = calls[n], budget = c.budget || data.budget || 0;
      const bh = Math.max(2, Math.min(1, (c.tokens || 0) / scale) * ch);
      ctx.fillStyle = budget && c.tokens > budget ? "#dc2626" : "#334155";
      ctx.fillRect(tlX(c.t) - 1, cy + ch - bh, 2.5, bh);
    }
    paintPicked(ctx);
    ctx.restore();
    // the scale, for whoever points at a time from outside (tests, scripts)
    canvas.dataset.scale = JSON.stringify({ view0, view1, left: TL_LABEL, right, state: [sy, sy + sh],
      marks: [my, my + mh], calls: [cy, cy + ch] });
    drawViewport(...visibleRows());
  }

  /** The selected state, mark or model call, outlined on the timeline. */
  function paintPicked(ctx) {
    if (!selected) return;
    ctx.strokeStyle = "#0f172a";
    ctx.lineWidth = 2;
    if (selected.what === "state") {
      const s = states[selected.index], [sy, sh] = TL.state;
      ctx.strokeRect(tlX(s.t0) - 1, sy - 1, Math.max(2, tlX(s.t1) - tlX(s.t0)) + 2, sh + 2);
    } else if (selected.what === "call") {
      const [cy, ch] = TL.calls;
      ctx.strokeRect(tlX(calls[selected.index].t) - 3, cy - 1, 6.5, ch + 2);
    } else if (selected.what === "row" && rowIsMark[selected.index]) {
      const [my, mh] = TL.marks;
      ctx.beginPath();
      ctx.arc(tlX(marks[rowRef[selected.index]].t), my + mh / 2, 8, 0, 2 * Math.PI);
      ctx.stroke();
    }
  }

  /** What the timeline shows at (x, y): a state, a mark or a model call, or null. */
  function timelineHit(x, y) {
    if (x < TL_LABEL) return null;
    const t = tlT(x), [sy, sh] = TL.state, [my, mh] = TL.marks, [cy, ch] = TL.calls;
    const nearest = (items, slack) => {
      let best = -1, bestD = slack + 1;
      for (let j = bisect(items.length, (k) => items[k].t >= tlT(x - slack)); j < items.length && tlX(items[j].t) <= x + slack; j++) {
        const d = Math.abs(tlX(items[j].t) - x);
        if (d < bestD) { best = j; bestD = d; }
      }
      return best;
    };
    if (y >= sy - 2 && y <= sy + sh + 2) {
      const s = bisect(states.length, (k) => states[k].t0 > t) - 1;
      return s >= 0 && states[s].t1 >= t - (view1 - view0) / tlInner() ? { what: "state", index: s } : null;
    }
    if (y >= my - 3 && y <= my + mh + 3) {
      const j = nearest(marks, 6);
      return j >= 0 ? { what: "row", index: markRow[j] } : null;
    }
    if (y >= cy - 3 && y <= cy + ch + 2) {
      const n = nearest(calls, 4);
      return n >= 0 ? { what: "call", index: n } : null;
    }
    return null;
  }

  function drawViewport(firstVisible, lastVisible) {
    const box = el.tlViewport;
    if (lastVisible <= firstVisible || !tlWidth) { box.hidden = true; return; }
    const right = tlWidth - TL.right;
    const a = Math.max(TL_LABEL, Math.min(right, tlX(rowItem(shown[firstVisible]).t)));
    const b = Math.max(TL_LABEL, Math.min(right, tlX(rowItem(shown[lastVisible - 1]).t)));
    box.hidden = false;
    box.style.left = a - 1 + "px";
    box.style.width = Math.max(3, b - a + 2) + "px";
  }

  function drawStateLegend() {
    const total = new Map(), count = new Map();
    for (const s of states) {
      total.set(s.state, (total.get(s.state) || 0) + Math.max(0, s.t1 - s.t0));
      count.set(s.state, (count.get(s.state) || 0) + 1);
    }
    const names = [...STATES, ...[...count.keys()].filter((s) => !STATES.includes(s))];
    el.stateLegend.replaceChildren(...names.map((name) => h("button", {
      type: "button", class: "state-item" + (count.has(name) ? "" : " absent"), "data-testid": "state-legend-item",
      "data-state": name, "data-count": count.get(name) || 0, "data-seconds": total.get(name) || 0,
      title: count.has(name) ? `${count.get(name)} times, ${fmtDur(total.get(name))} in all; click: the next one` : "never in this trace",
      onclick: () => selectNextState(name),
    }, h("span", { class: "swatch", style: "background:" + colourOf(STATE_COLOURS, name, "#e5e7eb") }), name,
      h("span", { class: "dur" }, count.has(name) ? `×${fmtInt(count.get(name))} · ${fmtDur(total.get(name))}` : "—"))));
  }

  /** Select the next time the engine entered ``name`` (after the selected one), and show it. */
  function selectNextState(name) {
    const after = selected && selected.what === "state" ? selected.index : -1;
    let s = states.findIndex((st, k) => k > after && st.state === name);
    if (s < 0) s = states.findIndex((st) => st.state === name);
    if (s < 0) return;
    select("state", s, false);
    scrollToTime(states[s].t0);
  }

  // ---------------------------------------------------------------- model calls

  let callScaleCache = null;
  function callScale() {
    if (callScaleCache === null) {
      callScaleCache = 1;
      for (const c of calls) callScaleCache = Math.max(callScaleCache, c.tokens || 0, c.budget || data.budget || 0);
    }
    return callScaleCache;
  }

  function filterCalls() {
    shownCalls = [];
    calls.forEach((c, n) => { if (c.t >= filter.t0 && c.t <= filter.t1) shownCalls.push(n); });
    el.callsCount.textContent = shownCalls.length === calls.length ? "(" + fmtInt(calls.length) + ")" :
      "(" + fmtInt(shownCalls.length) + " of " + fmtInt(calls.length) + ")";
    el.callsBody.style.height = shownCalls.length * CALL_H + "px";
    drawCalls();
  }

  function levelSegments(c, scale) {
    const levels = c.levels || {};
    return LEVELS.map((level) => {
      const tokens = levels[level] || 0;
      return tokens > 0 ? `<span style="width:${(100 * tokens) / scale}%;background:${LEVEL_COLOURS[level]}" title="${level}: ${tokens}"></span>` : "";
    }).join("");
  }

  function drawCalls() {
    const [a, b] = inView(el.callsScroll, CALL_H, shownCalls.length);
    const first = Math.max(0, a - 4), last = Math.min(shownCalls.length, b + 4);
    Object.assign(callsDrawn, { first, last });
    const scale = callScale();
    const out = [];
    for (let p = first; p < last; p++) {
      const n = shownCalls[p], c = calls[n];
      const budget = c.budget || data.budget || 0;
      const omitted = (c.levels && c.levels.omitted) || 0;
      const sel = selected && selected.what === "call" && selected.index === n ? " sel" : "";
      out.push(`<div class="call${sel}" data-testid="model-call" data-n="${n}" style="top:${p * CALL_H}px" tabindex="0" role="button" aria-label="model call ${c.n}">` +
        `<div class="call-line"><span class="n">#${esc(c.n)}</span><span class="where">seq ${esc(c.seq)} · ${c.t.toFixed(3)} s</span>` +
        `<span class="model">${esc(c.model || "")}</span>` +
        (omitted ? `<span class="omitted">${fmtInt(omitted)} omitted</span>` : "") +
        (c.sent_tokens ? `<span class="shared" title="of the tokens sent, the call before's prefix">${percent(c.shared_tokens || 0, c.sent_tokens)} shared</span>` : "") +
        `<span class="tok">${fmtInt(c.tokens || 0)}${budget ? " / " + fmtInt(budget) : ""}</span></div>` +
        `<div class="bar">${levelSegments(c, scale)}${budget ? `<i class="budget" style="left:calc(${(100 * budget) / scale}% - 2px)"></i>` : ""}</div></div>`);
    }
    el.callsBody.innerHTML = out.join("");
  }

  // ---------------------------------------------------------------- details

  /** A call's usage as its output recorded it; "unknown" for a log older than usage. */
  function usageText(c) {
    const u = c.usage;
    if (!u) return "unknown (recorded before usage was)";
    const cached = u.input_tokens ? ` (${fmtInt(u.cached_input_tokens)} cached, ${percent(u.cached_input_tokens, u.input_tokens)})` : "";
    const counted = u.counted ? " (counted here: the model reported none)" : "";
    return `input ${fmtInt(u.input_tokens)}${cached}, output ${fmtInt(u.output_tokens)}${counted}`;
  }

  /** The context a call was sent and the prefix it shared with the call before's. */
  function sharedText(c) {
    if (c.sent_tokens === null || c.sent_tokens === undefined) return "unknown (recorded before the sent size was)";
    if (c.shared_tokens === null || c.shared_tokens === undefined) return `${fmtInt(c.sent_tokens)} tokens; shared prefix unknown`;
    return `${fmtInt(c.sent_tokens)} tokens, ${fmtInt(c.shared_tokens)} of them the call before's prefix (${percent(c.shared_tokens, c.sent_tokens)})`;
  }

  function percent(part, whole) {
    return whole ? Math.round((100 * part) / whole) + "%" : "-";
  }

  function dl(pairs) {
    return h("dl", {}, pairs.filter(Boolean).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }

  function actorRef(a) {
    return h("span", {}, h("span", { class: "chip", style: "background:" + roleColour(a) }, actors[a].role), " ",
      actors[a].label, actors[a].label !== actors[a].id ? h("span", { class: "mono" }, "  " + actors[a].id) : null);
  }

  function jump(label, action) {
    return h("button", { type: "button", class: "link", onclick: action }, label);
  }

  function showDetails(...nodes) {
    el.details.replaceChildren(...nodes);
    el.details.scrollTop = 0;
  }

  function messageDetails(r) {
    const k = rowRef[r], m = messages[k];
    const asked = m.reply_to === null || m.reply_to === undefined ? undefined : msgByI.get(m.reply_to);
    const replies = repliesOf(k);
    const call = callOfMessage(k);
    const st = stateAtSeq(m.seq);
    showDetails(
      h("h2", {}, "Message " + m.kind),
      dl([
        ["seq", h("span", { class: "mono" }, String(m.seq))],
        ["time", fmtT(m.t)],
        ["kind", m.kind],
        ["mode", m.mode],
        ["from", actorRef(mFrom[k])],
        ["to", actorRef(mTo[k])],
        ["summary", h("span", { "data-testid": "detail-summary" }, m.summary || "")],
        asked !== undefined && ["answers", jump(`#${m.reply_to} ${messages[asked].kind} (seq ${messages[asked].seq})`, () => select("row", msgRow[asked], true))],
        replies.length > 0 && ["replies", h("span", {}, replies.map((j) => jump(`#${messages[j].i} ${messages[j].kind} (+${fmtDur(messages[j].t - m.t)})`, () => select("row", msgRow[j], true))))],
        st >= 0 && ["engine state", states[st].state],
        ["message i", h("span", { class: "mono" }, String(m.i))],
      ]),
      call >= 0 ? h("p", {}, jump(`Show the context of model call #${calls[call].n}`, () => select("call", call, true))) : null);
  }

  function markDetails(r) {
    const k = marks[rowRef[r]];
    showDetails(
      h("h2", {}, "Mark: " + k.type),
      dl([["type", k.type], ["author", markAuthor[rowRef[r]] >= 0 ? actorRef(markAuthor[rowRef[r]]) : k.author || "?"],
        ["seq", h("span", { class: "mono" }, String(k.seq))], ["time", fmtT(k.t)],
        ["summary", h("span", { "data-testid": "detail-summary" }, k.summary || "")]]));
  }

  function stateDetails(s) {
    const st = states[s];
    showDetails(
      h("h2", {}, "Engine state " + st.state),
      dl([["state", h("span", { "data-testid": "detail-state" }, st.state)], ["start", fmtT(st.t0)], ["end", fmtT(st.t1)],
        ["duration", h("span", { "data-testid": "detail-duration" }, fmtDur(st.t1 - st.t0))],
        ["seq", `${st.seq0} – ${st.seq1}`]]),
      h("p", {}, jump("Show in the diagram", () => scrollToTime(st.t0))));
  }

  function textBlock(key, testid) {
    const has = Object.prototype.hasOwnProperty.call(texts, key);
    return h("pre", { class: "text" + (has ? "" : " missing"), "data-testid": testid, "data-text": key },
      has ? texts[key] : `(text ${key} is not in this trace)`);
  }

  function callDetails(n) {
    const c = calls[n];
    const budget = c.budget || data.budget || 0;
    const levels = c.levels || {};
    const entries = c.entries || [];
    const scale = Math.max(1, budget, c.tokens || 0);
    const list = entries.map((e, j) => h("div", {
      class: "entry", "data-testid": "context-entry", "data-id": e.id, "data-level": e.level,
      id: "entry-" + j, style: "border-left-color:" + colourOf(LEVEL_COLOURS, e.level, "#94a3b8"),
    }, h("div", { class: "entry-head" },
      h("span", { class: "chip", style: "background:" + colourOf(LEVEL_COLOURS, e.level, "#94a3b8") }, e.level),
      h("span", { class: "mono" }, e.id), fmtInt(e.tokens || 0) + " tokens"), textBlock(e.text, "context-text")));
    const bar = h("div", { class: "bar big", "data-testid": "context-bar" },
      entries.map((e, j) => h("span", {
        style: `width:${(100 * (e.tokens || 0)) / scale}%;background:${colourOf(LEVEL_COLOURS, e.level, "#94a3b8")}`,
        title: `${e.id} · ${e.level} · ${e.tokens} tokens`,
        onclick: () => { const node = $("entry-" + j); node.scrollIntoView({ block: "nearest" }); node.classList.add("flash"); setTimeout(() => node.classList.remove("flash"), 900); },
      })),
      budget ? h("i", { class: "budget", style: `left:calc(${(100 * budget) / scale}% - 2px)`, title: "budget " + budget }) : null);
    showDetails(
      h("h2", { "data-testid": "call-title" }, `Model call #${c.n}`),
      dl([["seq", h("span", { class: "mono" }, String(c.seq))], ["time", fmtT(c.t)], ["model", c.model || "?"],
        ["tokens", `${fmtInt(c.tokens || 0)}${budget ? ` of ${fmtInt(budget)} (${Math.round((100 * (c.tokens || 0)) / budget)}%)` : ""}`],
        ["omitted", `${fmtInt(levels.omitted || 0)} entries not shown`],
        ["usage", h("span", { "data-testid": "call-usage" }, usageText(c))],
        ["sent", h("span", { "data-testid": "call-shared" }, sharedText(c))]]),
      h("div", { class: "levels" }, LEVELS.map((level) => h("span", {}, h("i", { style: "background:" + LEVEL_COLOURS[level] }), `${level} ${fmtInt(levels[level] || 0)}`))),
      bar,
      h("p", {}, jump("Show in the diagram", () => scrollToRow(rowOfSeq(c.seq)))),
      h("h2", {}, `Context: ${fmtInt(entries.length)} entries, oldest first`),
      h("div", { "data-testid": "context" }, list),
      h("div", { class: "output" }, h("h2", {}, "Output"), c.output === null || c.output === undefined ? h("p", {}, "(none)") : textBlock(c.output, "context-output")));
  }

  /** The first row of a message at seq (a mark's row if no message has it), -1 if none. */
  function rowOfSeq(seq) {
    const k = bisect(messages.length, (j) => messages[j].seq >= seq);
    if (k < messages.length && messages[k].seq === seq) return msgRow[k];
    const j = bisect(marks.length, (x) => marks[x].seq >= seq);
    return j < marks.length && marks[j].seq === seq ? markRow[j] : -1;
  }

  /** Select a row, a model call or a state: show its details, and its row if asked to. */
  function select(what, index, reveal) {
    selected = { what, index };
    if (what === "row") {
      if (rowIsMark[index]) markDetails(index); else messageDetails(index);
      if (reveal) {
        const p = bisect(shown.length, (q) => shown[q] >= index);
        if (p < shown.length && shown[p] === index) scrollToPosition(p);
      }
    } else if (what === "call") {
      callDetails(index);
      if (reveal) {
        const p = shownCalls.indexOf(index);
        if (p >= 0) el.callsScroll.scrollTop = Math.max(0, p * CALL_H - el.callsScroll.clientHeight / 3);
      }
    } else {
      stateDetails(index);
    }
    drawDiagram();
    drawCalls();
    drawTimeline();
  }

  function clearSelection() {
    selected = null;
    el.details.replaceChildren(h("p", { class: "hint" }, "Click a message, a state, a mark or a model call to see its details."));
    drawDiagram(); drawCalls(); drawTimeline();
  }

  // ---------------------------------------------------------------- tooltips and events

  /** The tooltip's text for a row, a state or a model call. */
  function describe(what, index) {
    if (what === "row") {
      const item = rowItem(index);
      if (rowIsMark[index]) return `${item.type} by ${item.author}\nseq ${item.seq} · ${fmtT(item.t)}\n${item.summary || ""}`;
      const k = rowRef[index];
      return `${item.kind} (${item.mode})\n${actors[mFrom[k]].label} → ${actors[mTo[k]].label}\nseq ${item.seq} · ${fmtT(item.t)}\n${item.summary || ""}`;
    }
    if (what === "state") {
      const s = states[index];
      return `${s.state}\n${fmtT(s.t0)} → ${fmtT(s.t1)} (${fmtDur(s.t1 - s.t0)})\nseq ${s.seq0}–${s.seq1}`;
    }
    const c = calls[index];
    return `model call #${c.n} (${c.model})\nseq ${c.seq} · ${fmtT(c.t)}\n${fmtInt(c.tokens || 0)} tokens, ${fmtInt((c.levels && c.levels.omitted) || 0)} omitted`;
  }

  /** What a node of the diagram or of the calls list stands for, or null. */
  function nodeHit(target) {
    const row = target.closest("[data-r]");
    if (row) return { what: "row", index: Number(row.dataset.r) };
    const call = target.closest("[data-n]");
    return call ? { what: "call", index: Number(call.dataset.n) } : null;
  }

  function showTooltip(ev, hit) {
    if (!hit) { el.tooltip.hidden = true; return; }
    el.tooltip.textContent = describe(hit.what, hit.index);
    el.tooltip.hidden = false;
    const w = el.tooltip.offsetWidth, ht = el.tooltip.offsetHeight;
    el.tooltip.style.left = Math.min(ev.clientX + 14, window.innerWidth - w - 4) + "px";
    el.tooltip.style.top = (ev.clientY + 16 + ht > window.innerHeight ? ev.clientY - ht - 8 : ev.clientY + 16) + "px";
  }
  const hideTooltip = () => { el.tooltip.hidden = true; };

  function wireEvents() {
    el.scroll.addEventListener("scroll", scheduleDraw, { passive: true });
    el.callsScroll.addEventListener("scroll", onScroll(el.callsScroll, CALL_H, () => shownCalls.length, callsDrawn, drawCalls, () => {}), { passive: true });
    el.svg.addEventListener("click", (ev) => {
      const row = ev.target.closest("[data-r]");
      if (row) select("row", Number(row.dataset.r), false);
    });
    el.callsBody.addEventListener("click", (ev) => {
      const row = ev.target.closest("[data-n]");
      if (row) select("call", Number(row.dataset.n), false);
    });
    el.callsBody.addEventListener("keydown", (ev) => {
      const row = ev.target.closest("[data-n]");
      if (row && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); select("call", Number(row.dataset.n), false); }
    });
    for (const node of [el.svg, el.callsBody]) {
      node.addEventListener("mousemove", (ev) => showTooltip(ev, nodeHit(ev.target)));
      node.addEventListener("mouseleave", hideTooltip);
    }
    el.scroll.addEventListener("scroll", hideTooltip, { passive: true });

    // the timeline: a click picks what is under it (or scrolls the diagram to that time),
    // a drag selects a time range
    let dragFrom = null;
    const local = (ev) => { const box = el.timeline.getBoundingClientRect(); return [ev.clientX - box.left, ev.clientY - box.top]; };
    el.timeline.addEventListener("pointerdown", (ev) => {
      const [x] = local(ev);
      if (x < TL_LABEL) return;
      dragFrom = x;
      el.timeline.setPointerCapture(ev.pointerId);
    });
    el.timeline.addEventListener("pointermove", (ev) => {
      const [x, y] = local(ev);
      if (dragFrom === null) {
        const hit = timelineHit(x, y);
        el.timeline.style.cursor = hit ? "pointer" : "crosshair";
        showTooltip(ev, hit);
        return;
      }
      hideTooltip();
      el.tlBrush.hidden = Math.abs(x - dragFrom) <= 4;
      el.tlBrush.style.left = Math.min(x, dragFrom) + "px";
      el.tlBrush.style.width = Math.abs(x - dragFrom) + "px";
    });
    el.timeline.addEventListener("mouseleave", hideTooltip);
    el.timeline.addEventListener("pointerup", (ev) => {
      if (dragFrom === null) return;
      const [x, y] = local(ev), from = dragFrom;
      dragFrom = null;
      el.tlBrush.hidden = true;
      if (Math.abs(x - from) > 4) { setTimeRange(tlT(Math.min(x, from)), tlT(Math.max(x, from))); return; }
      const hit = timelineHit(x, y);
      if (hit === null) scrollToTime(tlT(x));
      else if (hit.what === "state") { select("state", hit.index, false); scrollToTime(states[hit.index].t0); }
      else select(hit.what, hit.index, true);
    });

    document.addEventListener("keydown", (ev) => {
      if (ev.target instanceof HTMLInputElement) { if (ev.key === "Escape") ev.target.blur(); return; }
      if (ev.key === "Escape") { clearSelection(); for (const d of document.querySelectorAll("details.filter[open]")) d.open = false; return; }
      if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp" && ev.key !== "j" && ev.key !== "k") return;
      if (!shown.length) return;
      ev.preventDefault();
      const down = ev.key === "ArrowDown" || ev.key === "j";
      let p = selected && selected.what === "row" ? bisect(shown.length, (q) => shown[q] >= selected.index) : -1;
      p = Math.max(0, Math.min(shown.length - 1, p < 0 ? 0 : p + (down ? 1 : -1)));
      select("row", shown[p], false);
      ensureRowVisible(p);
    });
    // one open filter at a time; a click elsewhere closes it
    document.addEventListener("click", (ev) => {
      for (const d of document.querySelectorAll("details.filter[open]")) if (!d.contains(ev.target)) d.open = false;
    });
    let resizing = false;
    window.addEventListener("resize", () => {
      if (resizing) return;
      resizing = true;
      requestAnimationFrame(() => { resizing = false; layoutColumns(); drawTimeline(); drawDiagram(); drawCalls(); });
    });
  }

  // ---------------------------------------------------------------- start

  performance.mark("trace-indexed");
  drawHeader();
  drawLegend();
  buildFilters();
  drawStateLegend();
  layoutColumns();
  filterCalls();
  applyFilters({});
  drawTimeline();
  wireEvents();
  performance.mark("trace-drawn");
  // ready once the first screen is painted: the frame after the one that lays it out
  requestAnimationFrame(() => requestAnimationFrame(() => {
    window.traceReadyAt = performance.now();
    window.traceReady = true;
    document.documentElement.dataset.ready = "true";
  }));
})();
