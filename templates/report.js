/* ragcite reports: the one script of every report, inlined and admitted by its hash (CSP).
 *
 * - sortable tables (table.sortable) and text filters (input[data-filter-table]);
 * - the run report's case table, built from the embedded case data one page at a time.
 *
 * Text from the data only ever reaches the page through textContent and attribute setters,
 * never through innerHTML, so a passage such as "<img src=x onerror=...>" stays text.
 */
(function () {
  "use strict";

  function $(id) { return document.getElementById(id); }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function fmt(v, digits) {
    if (v === null || v === undefined || typeof v !== "number" || !isFinite(v)) { return "n/a"; }
    return v.toFixed(digits === undefined ? 3 : digits);
  }

  function num(n) { return Number(n).toLocaleString("en-US"); }

  function readJSON(id) {
    var node = $(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  function markReady() {
    window.__ready = performance.now();
    document.documentElement.setAttribute("data-ready", "1");
  }

  /* ---- generic: sortable tables ------------------------------------------------------------ */

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) { return numeric ? null : ""; }
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent;
    if (!numeric) { return raw.trim(); }
    var v = parseFloat(raw);
    return isNaN(v) ? null : v;
  }

  function compareValues(a, b, numeric, dir) {
    if (numeric) {
      if (a === null && b === null) { return 0; }
      if (a === null) { return 1; }          /* undefined values last, in both directions */
      if (b === null) { return -1; }
      return (a - b) * dir;
    }
    return collator.compare(a, b) * dir;
  }

  /* The sortable and filterable units of a table: its rows, or, in a table.grouped, its
     tbody elements (a row and its detail row travel together). */
  function units(table) {
    if (table.classList.contains("grouped")) {
      return { parent: table, items: Array.prototype.slice.call(table.tBodies),
               key: function (u) { return u.rows[0]; } };
    }
    return { parent: table.tBodies[0], items: Array.prototype.slice.call(table.tBodies[0].rows),
             key: function (u) { return u; } };
  }

  function initSortable(table) {
    var head = table.tHead;
    if (!head) { return; }
    var ths = head.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, index) {
      var button = th.querySelector("button.sort");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "num";
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(ths, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var u = units(table);
        var keyed = u.items.map(function (item, i) {
          return [cellValue(u.key(item), index, numeric), i, item];
        });
        keyed.sort(function (x, y) { return compareValues(x[0], y[0], numeric, dir) || x[1] - y[1]; });
        var frag = document.createDocumentFragment();
        keyed.forEach(function (k) { frag.appendChild(k[2]); });
        u.parent.appendChild(frag);
      });
    });
  }

  /* ---- generic: text filter over a table's rows ---------------------------------------------- */

  function terms(text) {
    return text.toLowerCase().split(/\s+/).filter(function (t) { return t.length > 0; });
  }

  function initFilter(input) {
    var table = $(input.getAttribute("data-filter-table"));
    if (!table) { return; }
    var status = $(input.getAttribute("data-filter-status") || "");
    var rows = units(table).items;
    var hay = null;
    function apply() {
      if (hay === null) { hay = rows.map(function (r) { return r.textContent.toLowerCase(); }); }
      var ts = terms(input.value), shown = 0;
      rows.forEach(function (row, i) {
        var ok = ts.every(function (t) { return hay[i].indexOf(t) >= 0; });
        row.hidden = !ok;
        if (ok) { shown += 1; }
      });
      if (status) { status.textContent = shown + " of " + rows.length + " rows shown"; }
    }
    input.addEventListener("input", apply);
  }

  /* ---- the run report's case table --------------------------------------------------------- */

  function base64ToBytes(text) {
    if (typeof Uint8Array.fromBase64 === "function") { return Uint8Array.fromBase64(text); }
    var bin = atob(text), n = bin.length, out = new Uint8Array(n);
    for (var i = 0; i < n; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }

  var timing = window.__timing = { start: performance.now() };

  function unpack(block, name) {
    if (!block) { return Promise.reject(new Error("no " + name + " data in this report")); }
    if (block.encoding === "json") { return Promise.resolve(block.data); }
    if (block.encoding === "gzip-base64") {
      if (typeof DecompressionStream === "undefined") {
        return Promise.reject(new Error("this browser cannot inflate the embedded case data " +
          "(no DecompressionStream); read the results files instead (cases.parquet, passages.parquet)"));
      }
      var bytes = base64ToBytes(block.data);
      timing[name + "_decoded"] = performance.now();
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return new Response(stream).text().then(function (text) {
        timing[name + "_inflated"] = performance.now();
        var data = JSON.parse(text);
        timing[name + "_parsed"] = performance.now();
        return data;
      });
    }
    return Promise.reject(new Error("unknown case data encoding " + block.encoding));
  }

  var SHORT = {
    supported: "S", wrong_passage: "WP", unexpected_source: "US", other_source: "OS",
    cited: "C", passage_missed: "PM", source_missed: "SM"
  };
  var BAND_CLASS = { g: "band-green", m: "band-medium", r: "band-red", "-": "band-none" };
  var EXPLAIN = [["Passages", [0, 1, 2]], ["Sources", [3, 4, 5]]];

  /* One threshold's rows: the shared cases (ragcite-cases) with what it decided
     (ragcite-decided: columns of small values, runner/reports/cases.py) decoded. */
  function decode(meta, shared, block) {
    var err = Object.create(null);
    block.err.forEach(function (e) { err[e[0]] = e[1]; });
    function names(digits, list) { return digits.split("").map(function (d) { return list[Number(d)]; }); }
    return shared.id.map(function (id, i) {
      var f = block.f[block.k[i]];
      var row = { id: id, q: shared.q[i], m: f[0], b: f[1], cl: names(block.cl[i], meta.citation_labels),
                  rl: names(block.rl[i], meta.reference_labels), bits: block.M[i], x: block.x[i] };
      if (i in err) { row.err = err[i]; }
      return row;
    });
  }

  /* A case's details: its passages (ragcite-texts, shared by the thresholds) with this
     threshold's match matrix M (0/1, from its bits) and explanations X (of ragcite-explained). */
  function detailOf(c, t) {
    var d = { M: [], X: t.X[c.x] || [] }, n = t.C.length;
    for (var k in t) { if (Object.prototype.hasOwnProperty.call(t, k) && k !== "X") { d[k] = t[k]; } }
    for (var r = 0; r < t.R.length; r++) {
      d.M.push(c.bits.slice(r * n, (r + 1) * n).split("").map(Number));
    }
    return d;
  }

  /* rows: what the table shows, sorts and filters on (parsed before the first render);
     details: passages, matrices and explanations, parsed right after the first render and
     needed only to expand a case or to search its text. */
  function CaseTable(meta, cases, readDetails) {
    this.meta = meta;
    this.cases = cases;
    this.readDetails = readDetails;
    this.details = null;
    this.detailsPromise = null;
    this.order = cases.map(function (_, i) { return i; });
    this.filtered = this.order.slice();
    this.hay = new Array(cases.length);
    this.open = Object.create(null);
    this.page = 0;
    this.size = meta.page_size;
    this.sortKey = null;
    this.sortDir = 1;
    this.body = $("case-body");
    this.status = $("case-status");
    this.pageLabel = $("case-page");
    this.review = null;  /* pair review, when the report has one */
  }

  CaseTable.prototype.loadDetails = function () {
    var self = this;
    if (!this.detailsPromise) {
      this.detailsPromise = this.readDetails().then(function (texts) {
        if (texts.length !== self.cases.length) {
          throw new Error("the case details do not match the cases");
        }
        self.details = self.cases.map(function (c, i) { return detailOf(c, texts[i]); });
        self.docs = texts.docs;
        window.__detailsReady = performance.now();
        document.documentElement.setAttribute("data-details", "1");
        return self.details;
      });
    }
    return this.detailsPromise;
  };

  /* Another threshold of the job's page: its cases (the same, decided anew), details and
     review; the filters and the sort kept. */
  CaseTable.prototype.use = function (meta, cases, readDetails) {
    var key = this.sortKey, dir = this.sortDir;
    this.meta = meta;
    this.cases = cases;
    this.readDetails = readDetails;
    this.details = this.detailsPromise = this.sortKey = null;
    this.hay = new Array(cases.length);
    this.open = Object.create(null);
    this.order = cases.map(function (_, i) { return i; });
    document.documentElement.removeAttribute("data-details");
    if (this.review) { this.review.use(meta); }
    if (key === null) { this.applyFilters(); } else { this.sortBy(key); }
    if (key !== null && this.sortDir !== dir) { this.sortBy(key); }
  };

  CaseTable.prototype.haystack = function (i) {
    var h = this.hay[i];
    if (h === undefined) {
      var c = this.cases[i], d = this.details[i];
      var parts = [c.id, c.q, d.a || "", c.err || "", c.cl.join(" "), c.rl.join(" ")];
      d.R.forEach(function (r) { parts.push(r[0], r[1]); });
      d.C.forEach(function (x) { parts.push(x[0], x[1]); });
      parts.push(d.E.join(" "));
      h = this.hay[i] = parts.join("\n").toLowerCase();
    }
    return h;
  };

  CaseTable.prototype.applyFilters = function () {
    var label = $("case-label").value;
    var bandMetric = $("case-band-metric").value;
    var band = $("case-band").value;
    var ts = terms($("case-search").value);
    var self = this, cases = this.cases;
    var kind = label.charAt(0), name = label.slice(2);
    if ((ts.length || kind === "f") && !this.details) {  /* the quote fidelity is in the passages */
      this.status.textContent = "Loading the passages to search…";
      this.loadDetails().then(function () { self.applyFilters(); });
      return;
    }
    this.filtered = this.order.filter(function (i) {
      var c = cases[i];
      if (label === "error") {
        if (!c.err) { return false; }
      } else if (kind === "f") {
        if (!(self.details[i].F || []).some(function (f) { return f[0] === name; })) { return false; }
      } else if (label) {
        if ((kind === "c" ? c.cl : c.rl).indexOf(name) < 0) { return false; }
      }
      if (band) {
        if (bandMetric === "") {
          if (c.b.indexOf(band) < 0) { return false; }
        } else if (c.b.charAt(Number(bandMetric)) !== band) {
          return false;
        }
      }
      if (ts.length) {
        var h = self.haystack(i);
        for (var t = 0; t < ts.length; t++) { if (h.indexOf(ts[t]) < 0) { return false; } }
      }
      return true;
    });
    this.page = 0;
    this.render();
  };

  CaseTable.prototype.sortBy = function (key) {
    if (this.sortKey === key) {
      this.sortDir = -this.sortDir;
    } else {
      this.sortKey = key;
      this.sortDir = 1;
    }
    var cases = this.cases, dir = this.sortDir, value;
    var numeric = key.charAt(0) === "m" || key === "nc" || key === "nr";
    if (key.charAt(0) === "m") {
      var m = Number(key.slice(1));
      value = function (c) { return c.m[m]; };
    } else if (key === "nc") {
      value = function (c) { return c.cl.length; };
    } else if (key === "nr") {
      value = function (c) { return c.rl.length; };
    } else if (key === "q") {
      value = function (c) { return c.q; };
    } else {
      value = function (c) { return c.id; };
    }
    var keyed = cases.map(function (c, i) { return [value(c), i]; });
    keyed.sort(function (x, y) {
      var a = x[0], b = y[0];
      if (numeric) {
        if (a === null && b === null) { return x[1] - y[1]; }
        if (a === null) { return 1; }
        if (b === null) { return -1; }
        return (a - b) * dir || x[1] - y[1];
      }
      return collator.compare(a, b) * dir || x[1] - y[1];
    });
    this.order = keyed.map(function (k) { return k[1]; });
    var ths = document.querySelectorAll("#case-table thead th");
    Array.prototype.forEach.call(ths, function (th) {
      if (th.getAttribute("data-key") === key) {
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
    this.applyFilters();
  };

  CaseTable.prototype.pages = function () {
    return Math.max(1, Math.ceil(this.filtered.length / this.size));
  };

  CaseTable.prototype.labelChips = function (list, td) {
    var counts = Object.create(null), order = [];
    list.forEach(function (name) {
      if (!(name in counts)) { counts[name] = 0; order.push(name); }
      counts[name] += 1;
    });
    if (!list.length) { td.appendChild(el("span", "muted", "none")); }
    order.forEach(function (name) {
      var chip = el("span", "lab lab-" + name, (SHORT[name] || name) + " " + counts[name]);
      chip.title = counts[name] + " × " + name;
      td.appendChild(chip);
      td.appendChild(document.createTextNode(" "));
    });
  };

  CaseTable.prototype.row = function (i) {
    var c = this.cases[i];
    var tr = el("tr", "case-row" + (c.err ? " err" : "") + (this.open[i] ? " open" : ""));
    tr.setAttribute("data-index", String(i));
    tr.setAttribute("data-case-id", c.id);
    var td = el("td");
    var button = el("button", "expand", this.open[i] ? "▾" : "▸");
    button.type = "button";
    button.setAttribute("aria-expanded", this.open[i] ? "true" : "false");
    button.setAttribute("aria-label", "Show the details of case " + c.id);
    td.appendChild(button);
    tr.appendChild(td);
    tr.appendChild(el("td", "id", c.id));
    var q = el("td", "q", c.q.length > 220 ? c.q.slice(0, 220) + "…" : c.q);
    if (c.err) { q.appendChild(el("div", "small", "failed: " + c.err.slice(0, 200))); }
    tr.appendChild(q);
    for (var k = 0; k < 6; k++) {
      var cell = el("td", "num " + BAND_CLASS[c.b.charAt(k) || "-"], fmt(c.m[k]));
      cell.setAttribute("data-m", String(k));
      tr.appendChild(cell);
    }
    var tc = el("td", "nowrap");
    this.labelChips(c.cl, tc);
    tr.appendChild(tc);
    var tref = el("td", "nowrap");
    this.labelChips(c.rl, tref);
    tr.appendChild(tref);
    return tr;
  };

  function passage(text, emptyNote) {
    if (text && text.trim()) { return el("div", "txt", text); }
    return el("div", "txt empty", emptyNote);
  }

  function itemClass(label) {
    if (label === "supported" || label === "cited") { return "item ok"; }
    if (label === "wrong_passage" || label === "passage_missed") { return "item warn"; }
    if (label === "other_source") { return "item other"; }
    return "item bad";
  }

  /* A citation's quote fidelity (SPEC 6.1; F: [label, document, similarity, spans, excerpt]): a
     chip in its head (the similarity of a paraphrase, the document a misattributed quote comes
     from), where it was located (character offsets of the document as written) and the blocks
     of that document around its spans (excerpt: positions in docs, the ragcite-docs block of
     [offset, text] blocks, in order) with each span marked; an unchecked or fabricated quote
     has none. */
  function fidelityOf(f, box, head, meanings, docs) {
    var label = f[0], text = label, spans = (f[3] || []).slice().sort(function (a, b) { return a[0] - b[0]; });
    if (label === "paraphrased") { text += " " + fmt(f[2], 2); }
    if (label === "misattributed") { text += ": from " + f[1]; }
    var chip = el("span", "lab lab-" + label, text);
    chip.setAttribute("data-fidelity", label);
    chip.title = "quote fidelity: " + (meanings[label] || label);
    head.appendChild(document.createTextNode(" "));
    head.appendChild(chip);
    var line = el("div", "link small", !spans.length ? "nothing to highlight: " + (meanings[label] || label)
      : "quote located in " + f[1] + " at characters " + f[3].map(function (s) { return s[0] + "–" + s[1]; }).join(", ") + ":");
    line.setAttribute("data-located", label);
    box.appendChild(line);
    var parts = [];  /* the document's blocks around the spans, those that meet joined */
    (f[4] || []).forEach(function (k) {
      var last = parts[parts.length - 1], block = docs[k];
      if (last && last[0] + last[1].length === block[0]) { last[1] += block[1]; } else { parts.push(block.slice()); }
    });
    parts.forEach(function (part) {  /* each part, its spans marked */
      var at = part[0], piece = part[1], pos = 0, out = el("div", "txt excerpt", at > 0 ? "…" : "");
      out.setAttribute("data-excerpt", label);
      spans.forEach(function (s) {
        var a = Math.max(s[0] - at, pos), b = Math.min(s[1] - at, piece.length);
        if (b <= a) { return; }
        out.appendChild(document.createTextNode(piece.slice(pos, a)));
        out.appendChild(el("mark", null, piece.slice(a, b)));
        pos = b;
      });
      out.appendChild(document.createTextNode(piece.slice(pos)));
      box.appendChild(out);
    });
  }

  CaseTable.prototype.detail = function (i) {
    var c = this.cases[i], threshold = this.meta.threshold, self = this;
    var tr = el("tr", "detail");
    tr.setAttribute("data-detail-for", String(i));
    var td = el("td");
    td.colSpan = 11;
    tr.appendChild(td);
    if (!this.details) {
      td.appendChild(el("p", "muted", "Loading the case's passages…"));
      this.loadDetails().then(function () {
        if (tr.parentNode) { tr.parentNode.replaceChild(self.detail(i), tr); }
      });
      return tr;
    }
    var d = this.details[i];
    if (c.err) { td.appendChild(el("p", "notice", "Not scored — error: " + c.err)); }
    td.appendChild(el("h4", null, "Query"));
    td.appendChild(el("div", "txt", c.q));
    if (d.a) {
      td.appendChild(el("h4", null, "Answer"));
      td.appendChild(el("div", "txt", d.a));
    }
    var sides = el("div", "sides");
    var left = el("div", "refs"), right = el("div", "cits");
    left.appendChild(el("h4", null, "References (ground truth) — " + d.R.length));
    right.appendChild(el("h4", null, "Citations (response) — " + d.C.length));
    if (d.dg) {
      right.appendChild(el("p", "notice", d.dg + (d.dg === 1 ? " citation points" : " citations point")
        + " at no document (dangling: counted, not cited)"));
    }
    var S = d.S, M = d.M;
    function sim(r, k) { return S[r] && S[r][k] !== undefined ? S[r][k] : null; }
    function hit(r, k) { return !!(M[r] && M[r][k]); }
    function simText(v) { return v === null ? "decided without a similarity" : "similarity " + fmt(v); }
    d.R.forEach(function (r, ri) {
      var label = c.rl[ri] || "";
      var box = el("div", itemClass(label));
      box.setAttribute("data-ref", String(ri));
      var head = el("div");
      head.appendChild(el("span", "tag", "R" + (ri + 1)));
      head.appendChild(el("span", "lab lab-" + label, label));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("span", "src", r[0]));
      box.appendChild(head);
      box.appendChild(passage(r[1], "(empty passage: matched by any citation of the same source)"));
      var links = [], best = null, bestJ = -1;
      d.C.forEach(function (_, j) {
        var v = sim(ri, j);
        if (hit(ri, j)) {
          links.push("C" + (j + 1) + " (" + simText(v)
            + (c.cl[j] === "other_source" ? ", a citation of another document" : "") + ")");
        }
        if (v !== null && (best === null || v > best)) { best = v; bestJ = j; }
      });
      box.appendChild(el("div", "link", links.length ? "matched by " + links.join(", ")
        : "matched by no citation" + (best !== null && best > 0 ? " (closest: C" + (bestJ + 1) + ", similarity "
          + fmt(best) + (threshold !== null ? ", threshold " + threshold : "") + ")" : "")));
      left.appendChild(box);
    });
    d.C.forEach(function (x, ci) {
      var label = c.cl[ci] || "";
      var box = el("div", itemClass(label));
      box.setAttribute("data-cit", String(ci));
      var head = el("div");
      head.appendChild(el("span", "tag", "C" + (ci + 1)));
      head.appendChild(el("span", "lab lab-" + label, label));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("span", "src", x[0]));
      box.appendChild(head);
      box.appendChild(passage(x[1], "(empty passage)"));
      if (x[2]) { box.appendChild(el("div", "claim", "claim: " + x[2])); }
      if (d.F && d.F[ci]) { fidelityOf(d.F[ci], box, head, self.meta.label_text, self.docs); }
      var links = [], best = null, bestI = -1;
      d.R.forEach(function (_, ri) {
        var v = sim(ri, ci);
        if (hit(ri, ci)) { links.push("R" + (ri + 1) + " (" + simText(v) + ")"); }
        if (v !== null && (best === null || v > best)) { best = v; bestI = ri; }
      });
      box.appendChild(el("div", "link", links.length ? "matches " + links.join(", ")
        : "matches no reference" + (best !== null && best > 0 ? " (closest: R" + (bestI + 1) + ", similarity "
          + fmt(best) + (threshold !== null ? ", threshold " + threshold : "") + ")" : "")));
      if (label === "other_source") {
        var flag = el("div", "flag", "Credited by another document's passage: every reference it matches "
          + "belongs to another document, through text the passages share (such as boilerplate). "
          + "With scoring.require_same_source=true it would match nothing.");
        flag.setAttribute("data-flag", "other_source");
        box.appendChild(flag);
      }
      right.appendChild(box);
    });
    if (!d.R.length) { left.appendChild(el("p", "empty", "No reference passages.")); }
    if (!d.C.length) { right.appendChild(el("p", "empty", c.err ? "No response." : "No citations.")); }
    sides.appendChild(left);
    sides.appendChild(right);
    td.appendChild(sides);
    if (d.R.length && d.C.length) {
      td.appendChild(el("h4", null, "Similarity of each reference (row) and citation (column); matches highlighted"));
      var table = el("table", "matrix");
      var hr = el("tr");
      hr.appendChild(el("th"));
      d.C.forEach(function (_, j) { hr.appendChild(el("th", null, "C" + (j + 1))); });
      table.appendChild(hr);
      d.R.forEach(function (_, ri) {
        var row = el("tr");
        row.appendChild(el("th", null, "R" + (ri + 1)));
        d.C.forEach(function (_, j) {
          var v = sim(ri, j), cell = el("td", hit(ri, j) ? "hit" : null, v === null ? "—" : fmt(v));
          cell.title = (hit(ri, j) ? "match; " : "no match; ") + simText(v);
          row.appendChild(cell);
        });
        table.appendChild(row);
      });
      td.appendChild(table);
      if (this.review) { td.appendChild(this.review.casePairs(i)); }  /* pair review */
    }
    var explain = el("div", "explain");
    EXPLAIN.forEach(function (group) {
      var texts = group[1].map(function (k) { return d.X[k]; }).filter(function (t) { return t; });
      if (!texts.length) { return; }
      explain.appendChild(el("h4", null, group[0]));
      texts.forEach(function (t) { explain.appendChild(el("p", null, t)); });
    });
    if (explain.childNodes.length) { td.appendChild(explain); }
    td.appendChild(el("p", "small muted", "Expected sources: " + (d.E.length ? d.E.join("; ") : "none")));
    if (d.md) {
      td.appendChild(el("h4", null, "Metadata"));
      td.appendChild(el("pre", "meta", d.md));
    }
    return tr;
  };

  CaseTable.prototype.render = function () {
    var pages = this.pages();
    if (this.page >= pages) { this.page = pages - 1; }
    var start = this.page * this.size;
    var slice = this.filtered.slice(start, start + this.size);
    var frag = document.createDocumentFragment(), self = this;
    slice.forEach(function (i) {
      frag.appendChild(self.row(i));
      if (self.open[i]) { frag.appendChild(self.detail(i)); }
    });
    this.body.textContent = "";
    this.body.appendChild(frag);
    var n = this.filtered.length;
    this.status.textContent = n
      ? "Showing " + num(start + 1) + "–" + num(start + slice.length) + " of " + num(n) +
        " matching cases (" + num(this.cases.length) + " in the table). Click a row for its details."
      : "No case matches the filters (" + num(this.cases.length) + " in the table).";
    this.status.setAttribute("data-matching", String(n));
    this.pageLabel.textContent = "Page " + num(this.page + 1) + " of " + num(pages);
    $("case-first").disabled = $("case-prev").disabled = this.page === 0;
    $("case-next").disabled = $("case-last").disabled = this.page >= pages - 1;
  };

  CaseTable.prototype.toggle = function (tr) {
    var i = Number(tr.getAttribute("data-index"));
    var button = tr.querySelector("button.expand");
    if (this.open[i]) {
      delete this.open[i];
      var next = tr.nextSibling;
      if (next && next.getAttribute && next.getAttribute("data-detail-for") === String(i)) {
        next.parentNode.removeChild(next);
      }
      tr.classList.remove("open");
      button.textContent = "▸";
      button.setAttribute("aria-expanded", "false");
    } else {
      this.open[i] = true;
      tr.parentNode.insertBefore(this.detail(i), tr.nextSibling);
      tr.classList.add("open");
      button.textContent = "▾";
      button.setAttribute("aria-expanded", "true");
    }
  };

  CaseTable.prototype.bind = function () {
    var self = this, timer = null;
    this.body.addEventListener("click", function (event) {
      var tr = event.target.closest ? event.target.closest("tr.case-row") : null;
      if (!tr) { return; }
      var selection = window.getSelection ? String(window.getSelection()) : "";
      if (selection && event.target.tagName !== "BUTTON") { return; }  /* selecting text */
      self.toggle(tr);
    });
    $("case-search").addEventListener("input", function () {
      if (timer) { clearTimeout(timer); }
      timer = setTimeout(function () { timer = null; self.applyFilters(); }, 120);
    });
    ["case-label", "case-band-metric", "case-band"].forEach(function (id) {
      $(id).addEventListener("change", function () { self.applyFilters(); });
    });
    $("case-page-size").addEventListener("change", function () {
      self.size = Number($("case-page-size").value) || self.meta.page_size;
      self.page = 0;
      self.render();
    });
    $("case-reset").addEventListener("click", function () {
      $("case-search").value = "";
      $("case-label").value = "";
      $("case-band-metric").value = "";
      $("case-band").value = "";
      self.applyFilters();
    });
    $("case-first").addEventListener("click", function () { self.page = 0; self.render(); });
    $("case-prev").addEventListener("click", function () { self.page = Math.max(0, self.page - 1); self.render(); });
    $("case-next").addEventListener("click", function () { self.page = Math.min(self.pages() - 1, self.page + 1); self.render(); });
    $("case-last").addEventListener("click", function () { self.page = self.pages() - 1; self.render(); });
    var ths = document.querySelectorAll("#case-table thead th[data-key]");
    Array.prototype.forEach.call(ths, function (th) {
      th.querySelector("button.sort").addEventListener("click", function () {
        self.sortBy(th.getAttribute("data-key"));
      });
    });
  };

  /* ==== pair review ============================================================================
   * Each reference × citation pair of a case can be marked "same part", "different" or "unsure",
   * in the case's details or in the list of the pairs closest to the threshold. Marks live in the
   * browser's localStorage under meta.review_key (one key per report: every report opened from
   * disk shares one storage origin): {"v": 1, "marks": {"[case id, r, c]": "same" | "different"
   * | "unsure"}, "notes": {"[case id, r, c]": "text"}}. "Export labels.jsonl" downloads the same/different marks as a labels file made
   * in the page (Blob + <a download>): no request, nothing the CSP has to admit. Texts reach the
   * page through textContent only.
   * ============================================================================================ */

  var MARK_TEXT = { same: "same part", different: "different", unsure: "unsure" };
  var MARK_ORDER = ["same", "different", "unsure"];
  var ANNOTATOR_KEY = "ragcite-review:annotator";
  var CLOSEST_PAGE = 10;

  function localStore() {
    try { return window.localStorage || null; } catch (e) { return null; }
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function pairKey(id, r, c) { return JSON.stringify([id, r, c]); }

  function Review(meta, table) {
    var self = this;
    this.table = table;
    this.key = meta.review_key;
    this.threshold = typeof meta.threshold === "number" ? meta.threshold : null;
    this.store = localStore();
    this.marks = Object.create(null);
    this.notes = Object.create(null);
    this.index = Object.create(null);  /* case id → its position in the embedded cases */
    this.pairs = null;                 /* every pair with a similarity, closest first */
    this.shown = 0;
    this.status = $("review-status");
    table.cases.forEach(function (c, i) { if (!(c.id in self.index)) { self.index[c.id] = i; } });
    this.load();
  }

  /* Another threshold's marks (each threshold has its own key). */
  Review.prototype.use = function (meta) {
    this.key = meta.review_key;
    this.threshold = typeof meta.threshold === "number" ? meta.threshold : null;
    this.marks = Object.create(null);
    this.notes = Object.create(null);
    this.pairs = null;
    $("review-list").hidden = true;
    $("review-closest").setAttribute("aria-expanded", "false");
    this.load();
    this.count();
  };

  Review.prototype.load = function () {
    var saved = null;
    if (!this.store) { return; }
    try { saved = JSON.parse(this.store.getItem(this.key) || "null"); } catch (e) { saved = null; }
    var marks = saved && typeof saved.marks === "object" ? saved.marks : null;
    var notes = saved && typeof saved.notes === "object" ? saved.notes : null;
    for (var k in marks) {
      if (Object.prototype.hasOwnProperty.call(marks, k) &&
          Object.prototype.hasOwnProperty.call(MARK_TEXT, marks[k])) {
        this.marks[k] = marks[k];
      }
    }
    for (k in notes) {
      if (Object.prototype.hasOwnProperty.call(notes, k) && typeof notes[k] === "string") {
        this.notes[k] = notes[k];
      }
    }
  };

  Review.prototype.save = function () {
    if (!this.store) { return false; }
    try {
      if (Object.keys(this.marks).length || Object.keys(this.notes).length) {
        this.store.setItem(this.key, JSON.stringify({ v: 1, marks: this.marks, notes: this.notes }));
      } else {
        this.store.removeItem(this.key);
      }
      return true;
    } catch (e) {
      return false;
    }
  };

  Review.prototype.count = function (extra) {
    var n = { same: 0, different: 0, unsure: 0 }, total = 0;
    for (var k in this.marks) { n[this.marks[k]] += 1; total += 1; }
    this.status.textContent = (total ? total + " marked: " + n.same + " same part, " +
      n.different + " different, " + n.unsure + " unsure." : "No pair marked.") + (extra || "");
    this.status.setAttribute("data-marked", String(total));
  };

  /* Show the mark and note of `key` on every control of that pair on the page (or of all
     pairs), but in the note being typed. */
  Review.prototype.sync = function (key) {
    var marks = this.marks, notes = this.notes;
    Array.prototype.forEach.call(document.querySelectorAll("[data-pair]"), function (box) {
      var k = box.getAttribute("data-pair");
      if (key !== undefined && k !== key) { return; }
      var value = marks[k] || "";
      box.setAttribute("data-marked", value);
      Array.prototype.forEach.call(box.querySelectorAll("button[data-mark]"), function (b) {
        b.setAttribute("aria-pressed", b.getAttribute("data-mark") === value ? "true" : "false");
      });
      var note = box.querySelector("input.note");
      if (note && note !== document.activeElement) { note.value = notes[k] || ""; }
    });
  };

  Review.prototype.setNote = function (key, text) {
    if (text.trim()) { this.notes[key] = text; } else { delete this.notes[key]; }
    var saved = this.save();
    this.sync(key);
    if (!saved) { this.count(" Not saved: this browser keeps no local storage for this page."); }
  };

  /* Mark a pair (the same mark again unmarks it). */
  Review.prototype.set = function (key, value) {
    if (this.marks[key] === value) { delete this.marks[key]; } else { this.marks[key] = value; }
    var saved = this.save();
    this.sync(key);
    this.count(saved ? "" : " Not saved: this browser keeps no local storage for this page.");
  };

  /* Why a pair cannot be marked ("" when it can): the labels file needs both passages whole
     and not blank. */
  function unmarkable(d, r, c) {
    if ((d.Rc || []).indexOf(r) >= 0 || (d.Cc || []).indexOf(c) >= 0) {
      return "a passage is cut in this report (report.max_text_chars): it cannot be exported " +
        "whole, so the pair cannot be marked";
    }
    if (!d.R[r][1].trim() || !d.C[c][1].trim()) {
      return "a passage is empty: there is nothing to compare, so the pair cannot be marked";
    }
    return "";
  }

  /* The three mark buttons of reference r × citation c of case i. */
  Review.prototype.controls = function (i, r, c) {
    var self = this, id = this.table.cases[i].id, key = pairKey(id, r, c);
    var value = this.marks[key] || "", why = unmarkable(this.table.details[i], r, c);
    var box = el("span", "marks");
    box.setAttribute("data-pair", key);
    box.setAttribute("data-marked", value);
    MARK_ORDER.forEach(function (m) {
      var b = el("button", "btn mark mark-" + m, MARK_TEXT[m]);
      b.type = "button";
      b.setAttribute("data-mark", m);
      b.setAttribute("aria-pressed", m === value ? "true" : "false");
      b.setAttribute("aria-label", MARK_TEXT[m] + ": case " + id + ", R" + (r + 1) + " × C" + (c + 1));
      b.disabled = !!why;
      b.addEventListener("click", function () { self.set(key, m); });
      box.appendChild(b);
    });
    if (why) {
      box.appendChild(el("span", "small muted", " " + why));
      return box;
    }
    var note = el("input", "note");
    note.type = "text";
    note.maxLength = 2000;
    note.placeholder = "note (optional)";
    note.value = this.notes[key] || "";
    note.setAttribute("aria-label", "Note on case " + id + ", R" + (r + 1) + " × C" + (c + 1));
    note.addEventListener("input", function () { self.setNote(key, note.value); });
    box.appendChild(note);
    return box;
  };

  function similarityOf(d, r, c) {
    return d.S[r] && d.S[r][c] !== undefined ? d.S[r][c] : null;
  }

  /* The case view's block: one row per pair, with its similarity, decision and marks. */
  Review.prototype.casePairs = function (i) {
    var self = this, d = this.table.details[i];
    var wrap = el("div", "review-pairs");
    wrap.appendChild(el("h4", null, "Review: does the citation refer to the same part of the " +
      "document as the reference?"));
    var table = el("table", "pairs"), head = el("tr");
    ["Pair", "Similarity", "Decision", "Your mark"].forEach(function (t) { head.appendChild(el("th", null, t)); });
    table.appendChild(head);
    d.R.forEach(function (_, r) {
      d.C.forEach(function (_, c) {
        var v = similarityOf(d, r, c), tr = el("tr");
        tr.setAttribute("data-review-pair", r + ":" + c);
        tr.appendChild(el("td", "mono", "R" + (r + 1) + " × C" + (c + 1)));
        tr.appendChild(el("td", "num", v === null ? "—" : fmt(v, 4)));
        tr.appendChild(el("td", null, d.M[r] && d.M[r][c] ? "match" : "no match"));
        var td = el("td");
        td.appendChild(self.controls(i, r, c));
        tr.appendChild(td);
        table.appendChild(tr);
      });
    });
    wrap.appendChild(table);
    return wrap;
  };

  /* Every pair with a similarity, by |similarity − threshold| (to 1e-6), then in the order of
     the embedded cases, references and citations. */
  Review.prototype.closest = function () {
    if (this.pairs) { return this.pairs; }
    var t = this.threshold, out = [];
    this.table.details.forEach(function (d, i) {
      d.R.forEach(function (_, r) {
        d.C.forEach(function (_, c) {
          var v = similarityOf(d, r, c);
          if (v !== null) { out.push([Math.round(Math.abs(v - t) * 1e6), i, r, c]); }
        });
      });
    });
    out.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || a[3] - b[3]; });
    this.pairs = out;
    return out;
  };

  function passageBox(tag, item) {
    var box = el("div", "item");
    var head = el("div");
    head.appendChild(el("span", "tag", tag));
    head.appendChild(el("span", "src", item[0]));
    box.appendChild(head);
    box.appendChild(passage(item[1], "(empty passage)"));
    return box;
  }

  Review.prototype.item = function (pair) {
    var i = pair[1], r = pair[2], c = pair[3], t = this.threshold;
    var d = this.table.details[i], id = this.table.cases[i].id, v = similarityOf(d, r, c);
    var li = el("li", "review-item");
    li.setAttribute("data-case-id", id);
    li.setAttribute("data-pair-at", r + ":" + c);
    var head = el("div", "review-head");
    head.appendChild(el("span", "id", id));
    head.appendChild(el("span", "tag", " R" + (r + 1) + " × C" + (c + 1) + " "));
    head.appendChild(el("span", "small", "similarity " + fmt(v, 4) + ", " +
      fmt(Math.abs(v - t), 4) + " from the threshold " + t + " (" +
      (d.M[r] && d.M[r][c] ? "match" : "no match") + ") "));
    head.appendChild(this.controls(i, r, c));
    li.appendChild(head);
    var sides = el("div", "sides");
    sides.appendChild(passageBox("R" + (r + 1), d.R[r]));
    sides.appendChild(passageBox("C" + (c + 1), d.C[c]));
    li.appendChild(sides);
    return li;
  };

  /* List the next page of the pairs closest to the threshold. */
  Review.prototype.more = function () {
    var list = $("review-list"), pairs = this.closest(), self = this;
    var ol = list.querySelector("ol") || list.appendChild(el("ol", "review-closest"));
    var old = list.querySelector("button.more");
    if (old) { list.removeChild(old); }
    pairs.slice(this.shown, this.shown + CLOSEST_PAGE).forEach(function (p) { ol.appendChild(self.item(p)); });
    this.shown = Math.min(pairs.length, this.shown + CLOSEST_PAGE);
    if (!pairs.length) { list.appendChild(el("p", "muted", "No pair of the table has a similarity.")); }
    if (this.shown < pairs.length) {
      var more = el("button", "btn more", "Show " + Math.min(CLOSEST_PAGE, pairs.length - this.shown) +
        " more (" + (pairs.length - this.shown) + " left)");
      more.type = "button";
      more.addEventListener("click", function () { self.more(); });
      list.appendChild(more);
    }
  };

  Review.prototype.toggleClosest = function (button) {
    var list = $("review-list"), self = this;
    if (!list.hidden) {
      list.hidden = true;
      button.setAttribute("aria-expanded", "false");
      return;
    }
    if (this.threshold === null) {
      this.count(" This result has no threshold: no pair is closest to it.");
      return;
    }
    this.table.loadDetails().then(function () {
      list.textContent = "";
      self.shown = 0;
      self.more();
      list.hidden = false;
      button.setAttribute("aria-expanded", "true");
    });
  };

  /* The labels file: the same/different marks of the embedded cases, in case, reference and
     citation order; the texts exactly as in the results files. */
  Review.prototype.labels = function () {
    var self = this, rows = [], skipped = { unsure: 0, unknown: 0, unmarkable: 0 };
    var annotator = $("review-annotator").value.trim();
    Object.keys(this.marks).forEach(function (key) {
      var m = self.marks[key], k = JSON.parse(key), i = self.index[k[0]];
      if (m === "unsure") { skipped.unsure += 1; return; }
      var d = i === undefined ? null : self.table.details[i];
      if (!d || !d.R[k[1]] || !d.C[k[2]]) { skipped.unknown += 1; return; }
      if (unmarkable(d, k[1], k[2])) { skipped.unmarkable += 1; return; }
      rows.push([i, k[1], k[2], m]);
    });
    rows.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
    var lines = rows.map(function (x) {
      var d = self.table.details[x[0]], ref = d.R[x[1]], cit = d.C[x[2]];
      var record = { reference: ref[1], citation: cit[1], label: x[3] === "same",
                     reference_source: ref[0], citation_source: cit[0],
                     case_id: self.table.cases[x[0]].id };
      if (annotator) { record.annotator = annotator; }
      var note = (self.notes[pairKey(record.case_id, x[1], x[2])] || "").trim();
      if (note) { record.note = note; }
      return JSON.stringify(record) + "\n";
    });
    return { text: lines.join(""), n: lines.length, skipped: skipped };
  };

  Review.prototype.exportLabels = function () {
    var self = this;
    this.table.loadDetails().then(function () {
      var out = self.labels(), s = out.skipped, notes = [];
      if (s.unsure) { notes.push(s.unsure + " unsure"); }
      if (s.unknown) { notes.push(s.unknown + " of cases not in this report's table"); }
      if (s.unmarkable) { notes.push(s.unmarkable + " with a passage cut in the report or empty"); }
      var left = notes.length ? " Not exported: " + notes.join(", ") + "." : "";
      if (!out.n) { self.count(" Nothing to export: mark pairs same part or different." + left); return; }
      var url = URL.createObjectURL(new Blob([out.text], { type: "application/x-ndjson" }));
      var a = el("a");
      a.href = url;
      a.download = "labels.jsonl";
      a.hidden = true;
      document.body.appendChild(a);
      a.click();
      document.body.removeChild(a);
      setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
      self.count(" Exported " + out.n + " to labels.jsonl." + left);
    });
  };

  Review.prototype.clear = function (button) {
    var n = Object.keys(this.marks).length, notes = Object.keys(this.notes).length;
    function disarm() { button.removeAttribute("data-armed"); button.textContent = "Clear marks"; }
    if (!n && !notes) { disarm(); this.count(); return; }
    if (button.getAttribute("data-armed") !== "1") {  /* a second click confirms */
      button.setAttribute("data-armed", "1");
      button.textContent = "Click again to clear " + [n ? plural(n, "mark") : "",
        notes ? plural(notes, "note") : ""].filter(Boolean).join(" and ");
      setTimeout(disarm, 6000);
      return;
    }
    disarm();
    this.marks = Object.create(null);
    this.notes = Object.create(null);
    var saved = this.save();
    this.sync();
    this.count(saved ? " Marks cleared." : " Not saved: this browser keeps no local storage for this page.");
  };

  Review.prototype.bind = function () {
    var self = this, name = $("review-annotator");
    try { name.value = (this.store && this.store.getItem(ANNOTATOR_KEY)) || ""; } catch (e) { name.value = ""; }
    name.addEventListener("input", function () {
      if (!self.store) { return; }
      try {
        if (name.value.trim()) { self.store.setItem(ANNOTATOR_KEY, name.value); } else { self.store.removeItem(ANNOTATOR_KEY); }
      } catch (e) { /* kept for this visit only */ }
    });
    $("review-closest").addEventListener("click", function () { self.toggleClosest(this); });
    $("review-export").addEventListener("click", function () { self.exportLabels(); });
    $("review-clear").addEventListener("click", function () { self.clear(this); });
    this.count(this.store ? "" : " This browser keeps no local storage for this page: marks last until it is closed.");
  };

  /* ==== end of pair review ==================================================================== */

  /* The threshold a job's page shows first: the one the URL fragment names (#t0.3), else the
     first; its parts shown, the others hidden. */
  function showView(sw) {
    var name = decodeURIComponent(location.hash.slice(1)), index = 0;
    Array.prototype.forEach.call(sw.options, function (o) {
      if (o.getAttribute("data-name") === name) { index = Number(o.value); }
    });
    sw.value = String(index);
    Array.prototype.forEach.call(document.querySelectorAll(".tview"), function (v) {
      v.hidden = v.getAttribute("data-view") !== String(index);
    });
    document.documentElement.setAttribute("data-view", String(index));
    document.documentElement.removeAttribute("data-details");
    return index ? "-" + index : "";
  }

  function loadLater(table) {
    /* The details are parsed after the first paint, so the table is usable at once. */
    setTimeout(function () {
      table.loadDetails().catch(function (error) {
        table.status.textContent = "The case details could not be read: " + error.message;
        table.status.className = "notice";
      });
    }, 0);
  }

  function initCases() {
    var sw = $("threshold-switch"), sfx = sw ? showView(sw) : "";
    var meta = readJSON("ragcite-meta" + sfx), texts = null;
    if (!meta || !$("ragcite-decided" + sfx)) { return false; }
    var shared = unpack(readJSON("ragcite-cases"), "cases");
    timing.block = performance.now();
    function readTexts() {  /* the passages and the documents' pieces, parsed once for every threshold */
      if (!texts) {
        texts = Promise.all([unpack(readJSON("ragcite-texts"), "texts"), unpack(readJSON("ragcite-docs")
          || { encoding: "json", data: [] }, "docs"), unpack(readJSON("ragcite-explained"), "explained")])
          .then(function (p) {
            p[0].forEach(function (t, i) { t.X = p[2][i]; });  /* each case's explanations */
            p[0].docs = p[1];
            return p[0];
          });
      }
      return texts;
    }
    function rows(meta, sfx) {
      return Promise.all([shared, unpack(readJSON("ragcite-decided" + sfx), "rows")]).then(function (parts) {
        return decode(meta, parts[0], parts[1]);
      });
    }
    rows(meta, sfx).then(function (cases) {
      var table = new CaseTable(meta, cases, readTexts);
      if (meta.review_key && $("review-status")) {  /* pair review */
        table.review = new Review(meta, table);
        table.review.bind();
      }
      table.bind();
      table.render();
      window.__ragcite = table;
      markReady();
      loadLater(table);
      if (!sw) { return; }
      sw.addEventListener("change", function () {
        location.hash = "#" + encodeURIComponent(sw.options[sw.selectedIndex].getAttribute("data-name"));
      });
      window.addEventListener("hashchange", function () {
        var next = showView(sw), chosen = sw.value, nextMeta = readJSON("ragcite-meta" + next);
        rows(nextMeta, next).then(function (cases) {
          if (sw.value !== chosen) { return; }  /* another was chosen meanwhile */
          table.use(nextMeta, cases, readTexts);
          loadLater(table);
        });
      });
    }).catch(function (error) {
      var status = $("case-status");
      status.textContent = "The case table could not be built: " + error.message;
      status.className = "notice";
      markReady();
    });
    return true;
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), initSortable);
    Array.prototype.forEach.call(document.querySelectorAll("input[data-filter-table]"), initFilter);
    if (!initCases()) { markReady(); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
