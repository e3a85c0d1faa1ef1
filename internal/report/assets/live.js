// surge's live page (--web): draws the live values with uPlot as they
// arrive over server-sent events (/events), and turns into the final
// report.html when the command ends.
//
// For checks by a headless browser it sets on <body>:
//   data-live-updates  status events received
//   data-charts-drawn  charts drawn at least once
//   data-phase, data-run, data-in-flight  the latest status's
//   data-final         "1" once the server said the report is written
//   data-js-errors     every JavaScript error and console.error, joined by " | "
(function () {
  "use strict";
  var errors = [];
  function noteError(msg) {
    errors.push(String(msg));
    document.body.setAttribute("data-js-errors", errors.join(" | "));
    var el = document.getElementById("js-errors");
    if (el) { el.textContent = errors.join("\n"); el.hidden = false; }
  }
  if (window.console && console.error) {
    var consoleError = console.error;
    console.error = function () {
      noteError("console: " + Array.prototype.join.call(arguments, " "));
      return consoleError.apply(console, arguments);
    };
  }
  window.addEventListener("error", function (e) { noteError(e.message || e); });

  var charts = {
    rates: { y: "requests/s", series: [["offered", "offered", "#6b7280"], ["sent", "sent", "#2563eb"], ["completed", "completed", "#7c3aed"], ["goodput", "goodput", "#16a34a"]] },
    latency: { y: "seconds", series: [["ttft_p95_s", "TTFT p95", "#ea580c"], ["e2e_p99_s", "completion p99", "#b91c1c"]] },
    inflight: { y: "requests", series: [["in_flight", "in flight", "#0f766e"], ["waiting", "engine waiting", "#a16207"]] }
  };
  var run = null, data = {}, plots = {}, phases = [], updates = 0, drawn = 0;

  function reset(name) {
    run = name; phases = [];
    Object.keys(charts).forEach(function (k) {
      data[k] = [[]].concat(charts[k].series.map(function () { return []; }));
      if (plots[k]) { plots[k].setData(data[k]); }
    });
  }

  // phaseLines draws a labelled vertical rule where each phase begins.
  function phaseLines(u) {
    var ctx = u.ctx;
    ctx.save();
    ctx.font = (11 * devicePixelRatio) + "px sans-serif";
    phases.forEach(function (p) {
      var x = Math.round(u.valToPos(p.at, "x", true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) { return; }
      ctx.strokeStyle = p.name === "burst" ? "#dc2626" : "#9ca3af";
      ctx.setLineDash([4, 4]);
      ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.fillStyle = "#374151";
      ctx.fillText(p.name, x + 4, u.bbox.top + 12 * devicePixelRatio);
    });
    ctx.restore();
  }

  function make(k) {
    var el = document.getElementById("chart-" + k);
    var spec = charts[k];
    var opts = {
      width: Math.max(480, Math.min(1200, el.clientWidth || 1000)), height: 260,
      scales: { x: { time: false } },
      axes: [{ label: "seconds since run start", labelSize: 20 }, { label: spec.y, labelSize: 22, size: 58 }],
      series: [{ label: "s", value: function (u, v, si, idx) { return idx == null ? "latest" : v; } }].concat(spec.series.map(function (s) {
        return {
          label: s[1], stroke: s[2], width: 2, spanGaps: false, points: { show: false },
          // Without the cursor over the chart, the legend shows the latest value.
          value: function (u, v, si, idx) {
            if (idx == null) { var a = u.data[si]; v = a.length ? a[a.length - 1] : null; }
            return v == null ? "—" : +v.toFixed(v < 10 ? 3 : 1);
          }
        };
      })),
      hooks: { draw: [phaseLines, function () { if (!el.dataset.drawn) { el.dataset.drawn = "1"; drawn++; document.body.setAttribute("data-charts-drawn", String(drawn)); } }] }
    };
    plots[k] = new uPlot(opts, data[k], el);
  }

  function fmtS(v) { return v == null ? "—" : v < 1 ? Math.round(v * 1000) + " ms" : v.toFixed(2) + " s"; }
  function text(id, v) { document.getElementById(id).textContent = v; }

  function clauses(list) {
    var ul = document.getElementById("clauses");
    ul.textContent = "";
    (list || []).forEach(function (c) {
      var li = document.createElement("li");
      var badge = document.createElement("span");
      var holds = c.value == null ? null : (c.above ? c.value >= c.limit : c.value <= c.limit);
      badge.className = "badge " + (holds == null ? "N/A" : holds ? "PASS" : "FAIL");
      badge.textContent = holds == null ? "NO DATA" : holds ? "HOLDS" : "OVER";
      var show = function (v) { return c.unit === "%" ? (v * 100).toFixed(1) + "%" : fmtS(v); };
      li.appendChild(badge);
      li.appendChild(document.createTextNode(" " + c.name + ": " + (c.value == null ? "no request yet" : show(c.value)) +
        " (limit " + (c.above ? "≥ " : "≤ ") + show(c.limit) + (c.n ? ", n=" + c.n : "") + ")"));
      ul.appendChild(li);
    });
  }

  function status(s) {
    if (s.run !== run) { reset(s.run); }
    if (!phases.length || phases[phases.length - 1].name !== s.phase) { phases.push({ name: s.phase, at: s.elapsed_s }); }
    Object.keys(charts).forEach(function (k) {
      var d = data[k];
      d[0].push(s.elapsed_s);
      charts[k].series.forEach(function (sr, i) { d[i + 1].push(s[sr[0]] == null ? null : s[sr[0]]); });
    });
    updates++;
    var b = document.body;
    b.setAttribute("data-live-updates", String(updates));
    b.setAttribute("data-phase", s.phase);
    b.setAttribute("data-run", s.run);
    b.setAttribute("data-in-flight", String(s.in_flight));
    text("run", s.run);
    var ph = document.getElementById("phase");
    ph.textContent = s.phase || "—";
    ph.className = "phase " + s.phase;
    text("elapsed", s.elapsed_s.toFixed(0) + " s" + (s.total_s ? " of " + s.total_s.toFixed(0) + " s" : ""));
    text("inflight", String(s.in_flight));
    text("errors", String(s.errors));
    text("drops", String(s.drops));
    text("lag", fmtS(s.lag_max_s));
    clauses(s.clauses);
  }

  var pending = false;
  function redraw() {
    pending = false;
    Object.keys(plots).forEach(function (k) { plots[k].setData(data[k]); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var state = { run: "", from: 0, history: [] };
    try {
      state = JSON.parse(document.getElementById("live-state").textContent);
      reset(null);
      state.history.forEach(status);
      Object.keys(charts).forEach(make);
      redraw();
    } catch (e) { noteError(e); }
    var es = new EventSource("events?run=" + encodeURIComponent(state.run) + "&from=" + state.from);
    es.onopen = function () { text("state", "(live)"); };
    es.onerror = function () { text("state", "(live: reconnecting…)"); };
    es.addEventListener("status", function (e) {
      try {
        status(JSON.parse(e.data));
        if (!pending) { pending = true; requestAnimationFrame(redraw); setTimeout(redraw, 50); }
      } catch (err) { noteError(err); }
    });
    es.addEventListener("final", function (e) {
      es.close();
      document.body.setAttribute("data-final", "1");
      var f = {};
      try { f = JSON.parse(e.data); } catch (err) { noteError(err); }
      if (f.report === false) {
        text("state", "(the command ended without a report: see its terminal)");
        return;
      }
      text("state", "(done: loading the report…)");
      location.replace("report.html");
    });
  });
})();
