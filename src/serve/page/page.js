// The translation page of `attnmt serve` (docs/serving.md, "The page"). It calls the server's JSON
// endpoints and builds every element with createElement + textContent: nothing the server or the
// user sends is ever parsed as markup, so a source such as <img src=x onerror=...> is shown as text.
// Numbers the tests compare (attention weights, delays, scores) are kept in data- attributes.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const state = {
    models: [],        // GET /v1/models
    view: "translate", // translate | compare | stream | interactive
    result: null,      // what the last run answered, for re-rendering when a hypothesis is picked
    line: 0,           // the input line shown in the compare and streaming views
    timer: null,       // the streaming animation
    steer: null,       // the interactive view's sentence: its translation shown, words, alternatives
  };

  // --- elements -------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  const fixed = (x, digits) => (typeof x === "number" && isFinite(x) ? x.toFixed(digits) : String(x));
  // SentencePiece marks a word start with U+2581; shown as is, so word boundaries stay visible.
  const pieceText = (p) => (p === "" ? "\u2205" : p);

  // --- messages and requests ------------------------------------------------------------------

  function showMessage(text, kind) {
    const m = $("message");
    m.textContent = text;
    m.className = "message " + (kind || "error");
    m.hidden = false;
  }
  function hideMessage() {
    $("message").hidden = true;
    $("message").textContent = "";
  }

  class ServerError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function send(method, path, body, accept) {
    const headers = {};
    const key = $("api-key").value.trim();
    if (key) headers["Authorization"] = "Bearer " + key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (accept) headers["Accept"] = accept;
    return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .catch((e) => { throw new ServerError(0, "cannot reach the server (" + e.message + ")"); });
  }

  // A ServerError for an answer that is not 2xx, with the server's {"error"} message.
  function failure(response, text, data) {
    const said = data && typeof data.error === "string" ? data.error : text.slice(0, 300) || response.statusText;
    let hint = "";
    if (response.status === 401) hint = " (enter the server's API key under \"API key\" above)";
    if (response.status === 503) hint = " (the server is busy or stopping; try again)";
    return new ServerError(response.status, response.status + ": " + said + hint);
  }
  function parseJson(text) {
    try {
      return JSON.parse(text);
    } catch (e) {
      return null;
    }
  }

  // The server's answer as JSON; a ServerError with its status and {"error"} message otherwise.
  async function call(method, path, body) {
    const response = await send(method, path, body);
    const text = await response.text();
    const data = parseJson(text);
    if (!response.ok) throw failure(response, text, data);
    if (data === null) throw new ServerError(response.status, "the server's answer is not JSON");
    return data;
  }

  // A streamed answer (text/event-stream): each server-sent event's name and JSON data to
  // onEvent, in order, as they arrive. An answer that is not a stream (a failure before the first
  // word) is a ServerError, as call() makes it. EventSource cannot POST, hence fetch and a reader.
  async function callStream(path, body, onEvent) {
    const response = await send("POST", path, body, "text/event-stream");
    if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      const text = await response.text();
      if (!response.ok) throw failure(response, text, parseJson(text));
      throw new ServerError(response.status, "the server's answer is not a stream of events");
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        buffer += decoder.decode(value || new Uint8Array(0), { stream: !done });
        buffer = buffer.replace(/\r\n?/g, "\n");
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = "message";
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) name = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (!data.length) continue;
          const parsed = parseJson(data.join("\n"));
          if (parsed === null) throw new ServerError(response.status, "a " + name + " event's data is not JSON");
          onEvent(name, parsed);
        }
        if (done) break;
      }
    } catch (e) {
      reader.cancel().catch(() => {});  // the server then stops decoding the sentence
      throw e;
    }
  }

  // --- models ---------------------------------------------------------------------------------

  function modelInfo(name) {
    return state.models.find((m) => m.name === name);
  }

  async function loadModels() {
    try {
      state.models = (await call("GET", "/v1/models")).models || [];
    } catch (e) {
      state.models = [];
      showMessage(e.message);
      if (e.status === 401) $("key-box").open = true;
      return false;
    }
    const select = clear($("model"));
    const boxes = clear($("compare-models"));
    for (const m of state.models) {
      const label = m.name + " (" + (m.attention || "?") + (m.streaming ? ", streams" : "") + ")";
      select.appendChild(el("option", { value: m.name }, label));
      const box = el("input", { type: "checkbox", value: m.name, "data-model": m.name });
      boxes.appendChild(el("label", {}, box, " " + m.name));
    }
    return true;
  }

  // A model the URL names but the server does not serve stays selectable, so that asking for it
  // shows the server's own 404.
  function selectModel(name) {
    const select = $("model");
    if (!name) return;
    if (!modelInfo(name)) select.appendChild(el("option", { value: name }, name + " (not served)"));
    select.value = name;
  }

  function applyModelDefaults() {
    const m = modelInfo($("model").value);
    if (!m) return;
    $("beam").value = m.beam_size;
    $("nbest").value = Math.min(m.n_best, m.beam_size);
  }

  function compareChoice() {
    return Array.from($("compare-models").querySelectorAll("input:checked")).map((b) => b.value);
  }

  // --- the heatmap ----------------------------------------------------------------------------

  const tip = () => $("tip");
  function showTip(cell, text) {
    const t = tip();
    t.textContent = text;
    t.hidden = false;
    const r = cell.getBoundingClientRect();
    t.style.left = Math.max(4, Math.min(window.innerWidth - t.offsetWidth - 4, r.left)) + "px";
    t.style.top = (r.bottom + 6 + t.offsetHeight > window.innerHeight ? r.top - t.offsetHeight - 6 : r.bottom + 6) + "px";
  }
  function hideTip() {
    tip().hidden = true;
  }

  // attention {src, tgt, weights [tgt][src]}: a table, a row per target subword and a column per
  // source subword; each cell's data-weight is the weight as the server sent it.
  function heatmap(attention, label) {
    const src = attention.src || [], tgt = attention.tgt || [], w = attention.weights || [];
    const table = el("table", { class: "heatmap", "data-rows": tgt.length, "data-cols": src.length,
                                "aria-label": label || "attention" });
    const head = el("tr", {}, el("th", { scope: "col" }, ""));
    src.forEach((p, s) => head.appendChild(el("th", { scope: "col", "data-s": s }, pieceText(p))));
    table.appendChild(el("thead", {}, head));
    const body = el("tbody");
    tgt.forEach((p, t) => {
      const row = el("tr", { "data-t": t }, el("th", { scope: "row" }, pieceText(p)));
      const weights = w[t] || [];
      let best = -1;
      weights.forEach((x, s) => { if (best < 0 || x > weights[best]) best = s; });
      src.forEach((q, s) => {
        const x = typeof weights[s] === "number" ? weights[s] : 0;
        const cell = el("td", { "data-t": t, "data-s": s, "data-weight": String(x), tabindex: 0, class: s === best ? "argmax" : "",
                                "aria-label": fixed(x, 4) + ": " + q + " \u2192 " + p });
        cell.style.backgroundColor = "rgba(31, 95, 191, " + Math.max(0, Math.min(1, x)).toFixed(4) + ")";
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
    table.appendChild(body);
    const mark = (cell, on) => {
      const t = cell.getAttribute("data-t"), s = cell.getAttribute("data-s");
      table.querySelectorAll('[data-s="' + s + '"]').forEach((c) => c.classList.toggle(c.tagName === "TH" ? "hl-col" : "hl", on));
      table.querySelectorAll('tbody tr[data-t="' + t + '"]').forEach((r) => r.classList.toggle("hl-row", on));
      if (on) {
        showTip(cell, fixed(Number(cell.getAttribute("data-weight")), 4) + "   " + pieceText(src[s]) + " \u2192 " + pieceText(tgt[t]));
      } else {
        hideTip();
      }
    };
    for (const type of ["mouseover", "focusin"]) {
      table.addEventListener(type, (e) => { if (e.target.tagName === "TD") mark(e.target, true); });
    }
    for (const type of ["mouseout", "focusout"]) {
      table.addEventListener(type, (e) => { if (e.target.tagName === "TD") mark(e.target, false); });
    }
    return el("div", { class: "scroll" }, table);
  }

  // The word alignment the attention implies (the server's links: each target word to the source
  // word its attention weighs most): two rows of words with a line per link, and as a list.
  function wordLinks(attention) {
    const sw = attention.src_words || [], tw = attention.tgt_words || [], links = attention.links || [];
    const box = el("div", { class: "links" });
    const charWidth = 7.6, gap = 14;
    const place = (words) => {
      let x = 4;
      return words.map((w) => {
        const width = Math.max(12, w.length * charWidth);
        const mid = x + width / 2;
        x += width + gap;
        return { word: w, mid, end: x };
      });
    };
    const top = place(sw), bottom = place(tw);
    const width = Math.max(top.length ? top[top.length - 1].end : 0, bottom.length ? bottom[bottom.length - 1].end : 0, 40);
    const picture = svg("svg", { class: "links-svg", width, height: 92, viewBox: "0 0 " + width + " 92", role: "img",
                                 "aria-label": "word alignment" });
    for (const [s, t] of links) {
      if (!top[s] || !bottom[t]) continue;
      picture.appendChild(svg("line", { x1: top[s].mid, y1: 22, x2: bottom[t].mid, y2: 70 }));
    }
    top.forEach((p) => picture.appendChild(svg("text", { x: p.mid, y: 14, "text-anchor": "middle" }, p.word)));
    bottom.forEach((p) => picture.appendChild(svg("text", { x: p.mid, y: 86, "text-anchor": "middle" }, p.word)));
    box.appendChild(el("div", { class: "scroll" }, picture));
    const list = el("ul", { class: "links-list", "aria-label": "links" });
    for (const [s, t] of links) {
      list.appendChild(el("li", { "data-src": s, "data-tgt": t }, (sw[s] || "?") + " \u2013 " + (tw[t] || "?")));
    }
    box.appendChild(list);
    return box;
  }

  // --- the translate view ---------------------------------------------------------------------

  function renderTranslate(result, lines) {
    const out = clear($("translations"));
    result.translations.forEach((nbest, i) => {
      const list = el("ol", { class: "nbest" });
      nbest.forEach((h, k) => {
        const item = el("li", { class: "hyp", tabindex: 0, "data-line": i, "data-rank": k, "data-score": h.score,
                                "data-log-prob": h.log_prob },
                        el("span", { class: "hyp-text" }, h.text),
                        el("span", { class: "scores" }, "score " + fixed(h.score, 3) + " \u00b7 log P " + fixed(h.log_prob, 3)));
        const pick = () => chooseHypothesis(i, k);
        item.addEventListener("click", pick);
        item.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
        list.appendChild(item);
      });
      out.appendChild(el("div", { class: "sentence", "data-line": i }, el("p", { class: "source" }, lines[i]), list));
    });
    chooseHypothesis(0, 0);
  }

  function chooseHypothesis(line, rank) {
    const box = clear($("attention"));
    document.querySelectorAll("#translations .hyp").forEach((h) => {
      h.classList.toggle("chosen", Number(h.getAttribute("data-line")) === line && Number(h.getAttribute("data-rank")) === rank);
    });
    const r = state.result;
    const h = r && r.translations[line] && r.translations[line][rank];
    if (!h || !h.attention) return;
    box.setAttribute("data-line", line);
    box.setAttribute("data-rank", rank);
    box.appendChild(el("h2", {}, "Attention: line " + (line + 1) + ", hypothesis " + (rank + 1)));
    box.appendChild(el("p", { class: "hint" }, "Rows: target subwords, columns: source subwords. Hover or focus a cell " +
                                              "for its weight; the framed cell of each row is its largest."));
    box.appendChild(heatmap(h.attention, "attention of line " + (line + 1) + ", hypothesis " + (rank + 1)));
    box.appendChild(el("h2", {}, "Word alignment"));
    box.appendChild(wordLinks(h.attention));
  }

  // --- the compare view -----------------------------------------------------------------------

  function linePicker(count, onPick) {
    if (count < 2) return null;
    const select = el("select", { id: "line-pick" });
    for (let i = 0; i < count; ++i) select.appendChild(el("option", { value: i }, "line " + (i + 1)));
    select.value = String(state.line);
    select.addEventListener("change", () => { state.line = Number(select.value); onPick(); });
    return el("label", { class: "line-pick" }, "Heatmap of ", select);
  }

  function renderCompare(results, scores) {
    const out = clear($("compare"));
    const picker = linePicker(results.length ? results[0].translations.length : 0, () => renderCompare(results, scores));
    if (picker) out.appendChild(picker);
    const grid = el("div", { class: "compare-grid" });
    results.forEach((r, k) => {
      const info = modelInfo(r.model) || {};
      const column = el("div", { class: "column", "data-model": r.model },
                        el("h3", {}, r.model, " ", el("span", { class: "attention-type" }, info.attention || "")));
      const s = scores[k];
      if (s) {
        column.appendChild(el("p", { class: "metrics", "data-bleu": s.bleu, "data-chrf": s.chrf, title: s.bleu_signature },
                              "BLEU ", el("b", {}, fixed(s.bleu, 2)), " \u00b7 chrF2 ", el("b", {}, fixed(s.chrf, 2))));
      }
      r.translations.forEach((nbest, i) => {
        const best = nbest[0] || { text: "" };
        column.appendChild(el("p", { class: "hyp-line" + (i === state.line ? " chosen" : ""), "data-line": i },
                              el("span", { class: "hyp-text" }, best.text)));
      });
      const chosen = r.translations[state.line] && r.translations[state.line][0];
      if (chosen && chosen.attention) {
        column.appendChild(heatmap(chosen.attention, r.model + ": attention of line " + (state.line + 1)));
        column.appendChild(wordLinks(chosen.attention));
      }
      grid.appendChild(column);
    });
    out.appendChild(grid);
  }

  // --- the streaming view ---------------------------------------------------------------------

  // A stream {src, tgt, delays, lagging}: target subword t was written once delays[t] source
  // subwords had been read. The slider walks the WRITEs; the grid shows the whole READ/WRITE path.
  function renderStream(answer) {
    const out = clear($("stream"));
    stopAnimation();
    const streams = answer.streams || [];
    const picker = linePicker(streams.length, () => renderStream(answer));
    if (picker) out.appendChild(picker);
    const st = streams[state.line] || streams[0];
    if (!st) return;
    const src = st.src, tgt = st.tgt, delays = st.delays;
    let path = "", read = 0;
    for (const d of delays) {
      path += "R".repeat(Math.max(0, d - read)) + "W";
      read = Math.max(read, d);
    }
    const box = el("div", { class: "stream", "data-model": answer.model, "data-lagging": st.lagging, "data-path": path,
                            "data-delays": delays.join(" "), "data-lookahead": answer.lookahead });
    box.appendChild(el("p", { class: "metrics" }, "Average lagging ", el("b", { class: "lagging" }, fixed(st.lagging, 2)),
                       " source subwords (of " + src.length + "), lookahead " + answer.lookahead + "; " + tgt.length +
                       " target subwords written" + (st.finished ? "" : ", cut at the maximum length")));
    if (!tgt.length) {
      box.appendChild(el("p", {}, "Nothing was written."));
      out.appendChild(box);
      return;
    }
    const slider = el("input", { type: "range", id: "stream-step", min: 1, max: tgt.length, value: tgt.length,
                                 "aria-label": "step" });
    const play = el("button", { type: "button", id: "stream-play" }, "Play");
    const stepLabel = el("span", { class: "step-label" });
    box.appendChild(el("div", { class: "stream-bar" }, play, slider, stepLabel));
    const srcRow = el("div", { class: "pieces", "aria-label": "source" });
    const srcPieces = src.map((p) => srcRow.appendChild(el("span", { class: "piece" }, pieceText(p))));
    const tgtRow = el("div", { class: "pieces", "aria-label": "target" });
    const tgtPieces = tgt.map((p) => tgtRow.appendChild(el("span", { class: "piece" }, pieceText(p))));
    box.appendChild(el("h2", {}, "Read"));
    box.appendChild(srcRow);
    box.appendChild(el("h2", {}, "Written"));
    box.appendChild(tgtRow);

    // The READ/WRITE path: a row per target subword, the source subwords read when it was written.
    const grid = el("table", { class: "stream-grid", "aria-label": "READ/WRITE path" });
    const head = el("tr", {}, el("th", {}, ""));
    src.forEach((p, s) => head.appendChild(el("th", { "data-s": s }, pieceText(p))));
    grid.appendChild(el("thead", {}, head));
    const body = el("tbody");
    const rows = tgt.map((p, t) => {
      const row = el("tr", { "data-t": t }, el("th", {}, pieceText(p)));
      src.forEach((q, s) => row.appendChild(el("td", { class: s < delays[t] - 1 ? "read" : s === delays[t] - 1 ? "head" : "" })));
      body.appendChild(row);
      return row;
    });
    grid.appendChild(body);
    box.appendChild(el("h2", {}, "READ/WRITE path"));
    box.appendChild(el("div", { class: "scroll" }, grid));

    const steps = el("ol", { class: "steps" });
    const stepItems = tgt.map((p, t) => {
      const reads = delays[t] - (t ? delays[t - 1] : 0);
      const text = (reads > 0 ? "READ " + reads + " (up to \u201c" + pieceText(src[delays[t] - 1] || "") + "\u201d), " : "") +
                   "WRITE \u201c" + pieceText(p) + "\u201d with " + delays[t] + " of " + src.length + " read";
      return steps.appendChild(el("li", { class: "step", "data-step": t, "data-read": delays[t] }, text));
    });
    box.appendChild(el("h2", {}, "Steps"));
    box.appendChild(steps);
    out.appendChild(box);

    const show = (k) => {  // k target subwords written
      const readNow = delays[k - 1];
      srcPieces.forEach((e, s) => { e.className = "piece" + (s < readNow - 1 ? " read" : s === readNow - 1 ? " head" : ""); });
      tgtPieces.forEach((e, t) => { e.className = "piece" + (t < k - 1 ? " written" : t === k - 1 ? " now" : ""); });
      rows.forEach((r, t) => { r.className = t < k - 1 ? "" : t === k - 1 ? "now" : "later"; });
      stepItems.forEach((e, t) => e.classList.toggle("now", t === k - 1));
      stepLabel.textContent = "step " + k + " of " + tgt.length + ": " + readNow + " read";
      box.setAttribute("data-shown", k);
    };
    slider.addEventListener("input", () => show(Number(slider.value)));
    play.addEventListener("click", () => {
      if (state.timer) return stopAnimation();
      let k = Number(slider.value) >= tgt.length ? 0 : Number(slider.value);
      play.textContent = "Pause";
      state.timer = setInterval(() => {
        k += 1;
        slider.value = k;
        show(k);
        if (k >= tgt.length) stopAnimation();
      }, 600);
    });
    show(tgt.length);
  }

  function stopAnimation() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
    const play = $("stream-play");
    if (play) play.textContent = "Play";
  }

  // --- the interactive view -------------------------------------------------------------------
  // The translation as it is written: POST /v1/translate with "stream": true (server-sent events,
  // docs/serving.md "Words as they are decided"), each word event appended as it comes. Then it
  // can be steered: a click on a word asks POST /v1/alternatives for the k most probable next
  // subwords after the words before it; picking one shows the translation the server decoded on
  // from there (the words before kept, the rest re-decoded), whose words can be clicked in turn.
  // What the tests compare sits in data- attributes; the steps taken go into the page's link.

  // One word per span, in `line`, from `text`, numbered from `first`; the spaces between stay text
  // nodes. A word is "kept" when it lies wholly within the first `kept` characters (the prefix the
  // server was given).
  function wordSpans(line, text, kept, first) {
    const spans = [];
    const offsets = [];
    for (const m of text.matchAll(/\S+/g)) offsets.push([m.index, m.index + m[0].length]);
    let at = 0;
    for (const [begin, end] of offsets) {
      if (begin > at) line.appendChild(document.createTextNode(text.slice(at, begin)));
      const i = (first || 0) + spans.length;
      const span = el("span", { class: "word" + (kept === undefined ? "" : end <= kept ? " kept" : " redecoded"),
                                tabindex: 0, role: "button", "data-w": i },
                      text.slice(begin, end));
      const ask = () => chooseWord(i);
      span.addEventListener("click", ask);
      span.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); ask(); } });
      spans.push(line.appendChild(span));
      at = end;
    }
    if (at < text.length) line.appendChild(document.createTextNode(text.slice(at)));
    return spans;
  }

  async function runInteractive(lines) {
    const out = clear($("interactive"));
    if (lines.length > 1) {
      showMessage("The interactive view translates one sentence at a time: keep one line in the box.", "note");
      return;
    }
    const source = lines[0];
    const model = $("model").value;
    const beam = number("beam");
    const box = el("div", { class: "sentence interactive", "data-model": model, "data-status": "writing" });
    box.appendChild(el("p", { class: "source" }, source));
    const live = el("p", { class: "live", id: "live", "aria-live": "polite" });
    box.appendChild(live);
    box.appendChild(el("div", { id: "alternatives" }));
    out.appendChild(box);
    state.steer = null;
    let events = 0;
    let answer = null;
    await callStream("/v1/translate", { model, text: [source], beam_size: beam, stream: true }, (name, data) => {
      if (name === "word") {
        live.appendChild(el("span", { class: "chunk", "data-event": events++ }, String(data.text)));
      } else if (name === "done") {
        answer = data;
      } else if (name === "error") {
        throw new ServerError(200, "the translation stopped: " + data.error);
      }
    });
    if (!answer) throw new ServerError(200, "the stream ended without the translation");
    const best = (answer.translations[0] || [])[0];
    const text = best ? best.text : "";
    box.setAttribute("data-events", events);
    box.setAttribute("data-final", text);
    if (live.textContent !== text) {  // never, by the server's guarantee; shown if it happens
      showMessage("The streamed words (\u201c" + live.textContent + "\u201d) are not the translation (\u201c" + text + "\u201d).");
    }
    // The words become clickable in place; the chunks they came in stay as they were.
    const words = [];
    for (const chunk of Array.from(live.querySelectorAll(".chunk"))) {
      const piece = chunk.textContent;
      clear(chunk);
      words.push(...wordSpans(chunk, piece, undefined, words.length));
    }
    box.setAttribute("data-status", "done");
    state.steer = { source, model, beam, text, words, live, alternatives: null, steps: [], asked: 0, pending: null };
  }

  // The prefix before word i of the translation shown: its text up to the word, trailing space cut.
  function prefixBefore(i) {
    const text = state.steer.text;
    const m = Array.from(text.matchAll(/\S+/g))[i];
    return text.slice(0, m ? m.index : text.length).replace(/\s+$/, "");
  }

  function chooseWord(i) {
    const st = state.steer;
    if (!st) return Promise.resolve();
    st.words.forEach((w, k) => w.classList.toggle("asked", k === i));
    const list = clear($("alternatives"));
    const prefix = prefixBefore(i);
    list.appendChild(el("p", { class: "busy" }, "Asking for alternatives\u2026"));
    // A word asked about and not picked from is replaced by the next one asked about.
    if (st.steps.length && st.steps[st.steps.length - 1][1] === null) st.steps.pop();
    st.steps.push([i, null]);
    const asked = ++st.asked;
    st.pending = call("POST", "/v1/alternatives", { model: st.model, text: st.source, prefix, k: number("k"),
                                                    beam_size: st.beam })
      .then((answer) => {
        if (st !== state.steer || asked !== st.asked) return;  // another click came since
        st.alternatives = answer.alternatives;
        renderAlternatives(list, i, prefix, answer);
        updateLink();
      })
      .catch((e) => {
        clear(list);
        showMessage(e.message || String(e));
      });
    return st.pending;
  }

  function renderAlternatives(list, i, prefix, answer) {
    clear(list);
    list.appendChild(el("p", { class: "alt-head" }, "After \u201c" + prefix + "\u201d (" +
                          (answer.prefix.pieces || []).length + " subwords), the next subword could be:"));
    const items = el("ol", { class: "alternatives", "data-word": i, "data-prefix": prefix });
    answer.alternatives.forEach((a, j) => {
      const pick = el("button", { type: "button", class: "alt", "data-rank": j, "data-piece": a.piece,
                                  "data-log-prob": a.log_prob, "data-prob": a.prob },
                      el("span", { class: "alt-piece" }, pieceText(a.piece)),
                      el("span", { class: "alt-prob" }, fixed(100 * a.prob, 1) + "%"));
      pick.addEventListener("click", () => pickAlternative(j));
      const bar = el("span", { class: "alt-bar" });
      bar.style.width = Math.max(0, Math.min(100, 100 * a.prob)).toFixed(1) + "%";
      items.appendChild(el("li", { "data-rank": j }, pick, el("span", { class: "alt-meter" }, bar),
                           el("span", { class: "alt-completion", "data-text": a.translation.text }, a.translation.text)));
    });
    list.appendChild(items);
  }

  // The alternative j of the list shown: its completion becomes the translation shown.
  function pickAlternative(j) {
    const st = state.steer;
    const a = st && st.alternatives && st.alternatives[j];
    if (!a) return;
    const [i] = st.steps[st.steps.length - 1];
    st.steps[st.steps.length - 1] = [i, j];
    const prefix = prefixBefore(i);
    st.text = a.translation.text;
    const live = clear(st.live);
    const kept = st.text.startsWith(prefix) ? prefix.length : 0;
    const chunk = live.appendChild(el("span", { class: "chunk picked", "data-piece": a.piece }));
    st.words = wordSpans(chunk, st.text, kept);
    const box = live.parentNode;
    box.setAttribute("data-status", "picked");
    box.setAttribute("data-final", st.text);
    box.setAttribute("data-prefix", prefix);
    st.alternatives = null;
    clear($("alternatives"));
    updateLink();
  }

  // The steps of a link (word=I, then pick=J, repeated), taken by clicking as a user would.
  async function replaySteps(words, picks) {
    for (let s = 0; s < words.length; ++s) {
      const st = state.steer;
      if (!st) return;
      const i = Number(words[s]);
      if (!st.words[i]) {
        showMessage("link: the translation has no word " + i + " (it has " + st.words.length + ")");
        return;
      }
      st.words[i].click();
      await st.pending;
      if (s >= picks.length || picks[s] === "") return;
      const pick = document.querySelector('#alternatives button.alt[data-rank="' + Number(picks[s]) + '"]');
      if (!pick) {
        showMessage("link: there is no alternative " + picks[s] + " after word " + i);
        return;
      }
      pick.click();
    }
  }

  // --- running a translation ------------------------------------------------------------------

  function inputLines() {
    const lines = $("src").value.replace(/\r\n?/g, "\n").split("\n");
    while (lines.length > 1 && lines[lines.length - 1].trim() === "") lines.pop();
    return lines;
  }
  function number(id) {
    const v = $(id).value.trim();
    return v === "" ? undefined : Number(v);  // sent as typed: the server says what is out of range
  }

  async function run() {
    const lines = inputLines();
    if (lines.length === 1 && lines[0].trim() === "") {
      showMessage("Type a sentence to translate.", "note");
      return;
    }
    hideMessage();
    stopAnimation();
    $("translate").disabled = true;
    $("busy").hidden = false;
    try {
      if (state.view === "compare") await runCompare(lines);
      else if (state.view === "stream") await runStream(lines);
      else if (state.view === "interactive") await runInteractive(lines);
      else await runTranslate(lines);
      updateLink();
    } catch (e) {
      showMessage(e.message || String(e));
    } finally {
      $("translate").disabled = false;
      $("busy").hidden = true;
    }
  }

  async function runTranslate(lines) {
    clear($("translations"));
    clear($("attention"));
    const result = await call("POST", "/v1/translate", { model: $("model").value, text: lines, beam_size: number("beam"),
                                                          n_best: number("nbest"), attention: true });
    state.result = result;
    renderTranslate(result, lines);
  }

  async function runCompare(lines) {
    clear($("compare"));
    const names = compareChoice();
    if (names.length < 2) {
      showMessage("Pick two or more models to compare (the boxes above).", "note");
      return;
    }
    const results = [];
    for (const name of names) {
      results.push(await call("POST", "/v1/translate", { model: name, text: lines, beam_size: number("beam"), attention: true }));
    }
    const ref = $("ref").value.replace(/\r\n?/g, "\n").split("\n");
    while (ref.length && ref[ref.length - 1].trim() === "") ref.pop();
    const scores = [];
    if (ref.length) {
      for (const r of results) {
        scores.push(await call("POST", "/v1/score", { hypotheses: r.translations.map((n) => (n[0] ? n[0].text : "")),
                                                      references: ref }));
      }
    }
    if (state.line >= lines.length) state.line = 0;
    renderCompare(results, scores);
  }

  async function runStream(lines) {
    clear($("stream"));
    const name = $("model").value;
    const info = modelInfo(name);
    if (info && !info.streaming) {
      const streaming = state.models.filter((m) => m.streaming).map((m) => m.name);
      showMessage("Model " + name + " (" + info.attention + ") cannot stream: streaming needs a monotonic or " +
                  "chunkwise attention that stops hard. " +
                  (streaming.length ? "Models that stream here: " + streaming.join(", ") + "." : "None of the models here streams."),
                  "note");
      return;
    }
    const answer = await call("POST", "/v1/stream", { model: name, text: lines, lookahead: number("lookahead") });
    if (state.line >= lines.length) state.line = 0;
    renderStream(answer);
  }

  // --- views, links, start --------------------------------------------------------------------

  const kViews = ["translate", "compare", "stream", "interactive"];
  function setView(view) {
    state.view = kViews.includes(view) ? view : "translate";
    document.body.setAttribute("data-view", state.view);
    for (const v of kViews) {
      $("view-" + v).hidden = v !== state.view;
      $("tab-" + v).setAttribute("aria-selected", String(v === state.view));
    }
  }

  // The page's state as a link: opening it translates the same input the same way. The API key
  // is never put in it.
  function updateLink() {
    const p = new URLSearchParams();
    p.set("text", $("src").value);
    p.set("model", $("model").value);
    const m = modelInfo($("model").value);
    if (m && String(m.beam_size) !== $("beam").value) p.set("beam", $("beam").value);
    if ($("nbest").value !== "1") p.set("nbest", $("nbest").value);
    if (state.view === "compare") {
      p.set("compare", compareChoice().join(","));
      if ($("ref").value.trim()) p.set("ref", $("ref").value);
    }
    if (state.view === "stream") {
      p.set("view", "stream");
      if ($("lookahead").value !== "0") p.set("lookahead", $("lookahead").value);
    }
    if (state.view === "interactive") {
      p.set("view", "interactive");
      if ($("k").value !== "5") p.set("k", $("k").value);
      for (const [word, pick] of (state.steer && state.steer.steps) || []) {
        p.append("word", word);
        if (pick !== null) p.append("pick", pick);
      }
    }
    const url = location.pathname + "?" + p.toString();
    history.replaceState(null, "", url);
    $("share-link").href = url;
    $("share-link").textContent = location.origin + url;
    $("share").hidden = false;
  }

  async function start() {
    const p = new URLSearchParams(location.search);
    setView(p.has("compare") ? "compare" : p.get("view") || "translate");
    if (p.has("text")) $("src").value = p.get("text");
    if (p.has("ref")) $("ref").value = p.get("ref");
    if (p.has("lookahead")) $("lookahead").value = p.get("lookahead");
    if (p.has("k")) $("k").value = p.get("k");
    const loaded = await loadModels();
    if (loaded) {
      if (p.get("model")) selectModel(p.get("model"));
      else if (state.view === "stream") {
        const streaming = state.models.find((m) => m.streaming);
        if (streaming) selectModel(streaming.name);
      }
      applyModelDefaults();
      if (p.has("compare")) {
        const wanted = p.get("compare").split(",").filter((x) => x);
        $("compare-models").querySelectorAll("input").forEach((b) => { b.checked = wanted.includes(b.value); });
        for (const name of wanted) {
          if (!modelInfo(name)) showMessage("compare: no model named " + name + " is served here");
        }
      } else {
        $("compare-models").querySelectorAll("input").forEach((b, i) => { b.checked = i < 2; });
      }
    }
    if (p.has("beam")) $("beam").value = p.get("beam");
    if (p.has("nbest")) $("nbest").value = p.get("nbest");
    $("form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
    $("form").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); }
    });
    $("model").addEventListener("change", applyModelDefaults);
    $("api-key").addEventListener("change", async () => { if (await loadModels()) hideMessage(); });
    document.querySelectorAll(".tabs button").forEach((b) => b.addEventListener("click", () => {
      setView(b.getAttribute("data-view"));
      if (state.view === "stream" && !(modelInfo($("model").value) || {}).streaming) {
        const streaming = state.models.find((m) => m.streaming);
        if (streaming) { selectModel(streaming.name); applyModelDefaults(); }
      }
      if ($("src").value.trim()) run();
    }));
    window.addEventListener("scroll", hideTip, { passive: true });
    if (loaded && $("src").value.trim()) {
      await run();
      if (state.view === "interactive" && p.has("word")) await replaySteps(p.getAll("word"), p.getAll("pick"));
    }
    document.body.setAttribute("data-ready", "true");
  }

  start();
})();
