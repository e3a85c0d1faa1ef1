// surge report.html: draws the charts described by the JSON block
// #surge-data with uPlot. Runs before uPlot is loaded so that it also catches
// errors while loading it; drawing starts on DOMContentLoaded.
//
// For checks by a headless browser it sets on <body>:
//   data-charts-expected  charts described by the data
//   data-charts-drawn     charts uPlot has drawn at least once
//   data-js-errors        every JavaScript error and console.error, joined by " | " (empty if none)
// and on each chart's element data-chart-id, data-points (points drawn) and
// data-ink (per mille of the plot area that is not blank after the first
// draw: the series, marks and bands really reached the canvas).
(function () {
  "use strict";
  var errors = [];
  var plots = [];
  // For checks by a headless browser: the uPlot instances, in page order.
  window.surgePlots = plots;
  var drawn = 0;

  function noteError(msg) {
    errors.push(String(msg));
    document.body.setAttribute("data-js-errors", errors.join(" | "));
    var el = document.getElementById("js-errors");
    if (el) {
      el.textContent = "Some charts could not be drawn:\n" + errors.join("\n");
      el.hidden = false;
    }
  }
  if (window.console && console.error) {
    var consoleError = console.error;
    console.error = function () {
      noteError("console: " + Array.prototype.join.call(arguments, " "));
      return consoleError.apply(console, arguments);
    };
  }
  window.addEventListener("error", function (e) {
    noteError((e.message || "error") + (e.lineno ? " (line " + e.lineno + ")" : ""));
  });

  var dpr = function () { return window.devicePixelRatio || 1; };

  function fmtNum(v, unit) {
    if (v == null || !isFinite(v)) return "—";
    var s;
    if (unit === "ms") s = v >= 100 ? v.toFixed(0) : v.toFixed(1);
    else if (unit === "req/s") s = v.toFixed(2);
    else if (unit === "s") s = v.toFixed(1);
    else s = Math.abs(v - Math.round(v)) < 1e-9 ? v.toFixed(0) : v.toFixed(1);
    return unit ? s + " " + unit : s;
  }

  // overlays draws phase bands behind the series, and markers and rules
  // (deadlines) on top of them.
  function overlays(run, spec) {
    function clampX(u, v) {
      var x = u.valToPos(v, "x", true);
      return Math.min(Math.max(x, u.bbox.left), u.bbox.left + u.bbox.width);
    }
    function label(ctx, text, x, y, color, alignRight) {
      var r = dpr();
      ctx.font = (11 * r) + "px system-ui, sans-serif";
      var w = ctx.measureText(text).width;
      var pad = 3 * r;
      var lx = alignRight ? x - w - 2 * pad : x;
      ctx.textAlign = "left";
      ctx.textBaseline = "alphabetic";
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(lx, y - 11 * r, w + 2 * pad, 14 * r);
      ctx.fillStyle = color;
      ctx.fillText(text, lx + pad, y);
    }
    return {
      hooks: {
        drawClear: [function (u) {
          var ctx = u.ctx, r = dpr();
          ctx.save();
          run.phases.forEach(function (p) {
            var x0 = clampX(u, p.start), x1 = clampX(u, p.end);
            if (x1 <= x0) return;
            ctx.fillStyle = p.color;
            ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
          });
          // Phase names go behind the series, so they never hide a line.
          ctx.font = (11 * r) + "px system-ui, sans-serif";
          run.phases.forEach(function (p) {
            var x0 = clampX(u, p.start), x1 = clampX(u, p.end);
            if (x1 - x0 > ctx.measureText(p.name).width + 10 * r) {
              label(ctx, p.name, x0 + 2 * r, u.bbox.top + u.bbox.height - 5 * r, "#6b7280", false);
            }
          });
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, r = dpr();
          ctx.save();
          ctx.font = (11 * r) + "px system-ui, sans-serif";
          spec.rules.forEach(function (rule) {
            var y = u.valToPos(rule.value, "y", true);
            if (!(y >= u.bbox.top && y <= u.bbox.top + u.bbox.height)) return;
            ctx.strokeStyle = "#444";
            ctx.lineWidth = 1 * r;
            ctx.setLineDash([4 * r, 4 * r]);
            ctx.beginPath();
            ctx.moveTo(u.bbox.left, y);
            ctx.lineTo(u.bbox.left + u.bbox.width, y);
            ctx.stroke();
            ctx.setLineDash([]);
            label(ctx, rule.label, u.bbox.left + 4 * r, y - 4 * r, "#444", false);
          });
          // Markers: a line each and a numbered tag (the list above the
          // charts gives each number its label and time). Tags are placed
          // greedily in rows from the top so that none overlaps another;
          // a tag that fits in no row is left out (its line stays).
          ctx.font = "bold " + (11 * r) + "px system-ui, sans-serif";
          var rowRight = [], rowH = 15 * r, maxRows = Math.max(1, Math.floor(u.bbox.height / rowH) - 1), skipped = 0, tags = [];
          run.markers.forEach(function (m) {
            var x = u.valToPos(m.t, "x", true);
            if (!(x >= u.bbox.left && x <= u.bbox.left + u.bbox.width)) return;
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1.5 * r;
            ctx.setLineDash(m.dash ? m.dash.map(function (d) { return d * r; }) : []);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.setLineDash([]);
            var text = String(m.n), w = ctx.measureText(text).width + 6 * r;
            var lx = Math.min(Math.max(x - w / 2, u.bbox.left), u.bbox.left + u.bbox.width - w);
            for (var row = 0; row < maxRows; row++) {
              if (rowRight[row] == null || lx > rowRight[row] + 2 * r) break;
            }
            if (row >= maxRows) { skipped++; return; }
            rowRight[row] = lx + w;
            var y = u.bbox.top + 2 * r + row * rowH;
            ctx.fillStyle = "#fff";
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1 * r;
            ctx.fillRect(lx, y, w, rowH - 3 * r);
            ctx.strokeRect(lx, y, w, rowH - 3 * r);
            tags.push([Math.round(lx), Math.round(y), Math.round(w), Math.round(rowH - 3 * r)].join(","));
            ctx.fillStyle = m.color;
            ctx.textAlign = "center";
            ctx.textBaseline = "middle";
            ctx.fillText(text, lx + w / 2, y + (rowH - 3 * r) / 2 + 0.5 * r);
          });
          // For checks: where the tags went (x,y,w,h in canvas pixels) and
          // how many found no room.
          u.root.setAttribute("data-tags", tags.join(" "));
          u.root.setAttribute("data-tags-skipped", String(skipped));
          ctx.restore();
        }]
      }
    };
  }

  function range(spec, scale) {
    return function (u, min, max) {
      if (scale === "y") {
        spec.rules.forEach(function (rule) {
          min = min == null ? rule.value : Math.min(min, rule.value);
          max = max == null ? rule.value : Math.max(max, rule.value);
        });
      }
      if (min == null || max == null) return spec.log && scale === "y" ? [1, 10] : [0, 1];
      if (spec.log && scale === "y") return uPlot.rangeLog(min, max, 10, true);
      return [0, max > 0 ? max * 1.08 : 1];
    };
  }

  // lastFinite is the latest value of a series: what its legend shows
  // when the cursor is not over the chart.
  // (within the charted time: a prediction may reach beyond it).
  function lastFinite(arr, t, xMax) {
    for (var i = arr.length - 1; i >= 0; i--) {
      if (t[i] < xMax && arr[i] != null && isFinite(arr[i])) return arr[i];
    }
    return null;
  }
  function lastTime(t, xMax) {
    for (var i = t.length - 1; i >= 0; i--) {
      if (t[i] < xMax) return t[i];
    }
    return null;
  }

  // decades are the log axis' ticks: powers of ten only, each labelled.
  function decades(u, ai, min, max) {
    var out = [];
    for (var e = Math.floor(Math.log10(min)); Math.pow(10, e) <= max * 1.0001; e++) {
      var v = Math.pow(10, e);
      if (v >= min * 0.9999) out.push(v);
    }
    return out;
  }
  function fmtMs(v) {
    if (v >= 1000) return (v / 1000) + " s";
    return (v >= 1 ? v.toFixed(0) : String(v)) + " ms";
  }

  // ink is the per mille of the plot area's pixels that are not blank.
  function ink(u) {
    var b = u.bbox, w = Math.floor(b.width), h = Math.floor(b.height);
    if (w <= 0 || h <= 0) return 0;
    var px = u.ctx.getImageData(Math.floor(b.left), Math.floor(b.top), w, h).data, n = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 0 && (px[i] < 225 || px[i + 1] < 225 || px[i + 2] < 225)) n++;
    }
    return Math.round(1000 * n / (w * h));
  }

  function makeChart(run, spec, el) {
    var scales = {
      x: { time: false, range: function () { return [run.x_min, run.x_max]; } },
      y: { range: range(spec, "y") }
    };
    if (spec.log) { scales.y.distr = 3; scales.y.log = 10; }
    var grid = { stroke: "#eef0f3" }, ticks = { stroke: "#d1d5db" };
    var yAxis = { label: spec.y, labelSize: 22, size: 58, stroke: "#4b5563", grid: grid, ticks: ticks };
    if (spec.log) {
      yAxis.splits = decades;
      yAxis.values = function (u, splits) { return splits.map(fmtMs); };
    }
    var axes = [
      { label: "seconds since run start", labelSize: 20, stroke: "#4b5563", grid: grid, ticks: ticks },
      yAxis
    ];
    var t = spec.t || run.t;
    var counts = spec.counts || null;
    var series = [{
      label: "time",
      value: function (u, v, si, idx) {
        if (idx == null) {
          var lt = lastTime(t, run.x_max);
          return lt == null ? "—" : "latest (" + lt.toFixed(0) + " s)";
        }
        var s = v == null ? "—" : v.toFixed(0) + " s";
        if (counts && counts[idx] != null) s += " · " + counts[idx].toFixed(0) + " " + (spec.count_label || "samples");
        return s;
      }
    }];
    var stepped = spec.step && uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : null;
    spec.series.forEach(function (s) {
      var o = {
        label: s.label,
        stroke: s.color,
        width: s.width || 1.75,
        dash: s.dash || undefined,
        fill: s.fill || undefined,
        scale: s.scale,
        spanGaps: !!s.span,
        points: s.points ? { show: true, size: 4, width: 1, fill: "#fff" } : { show: false },
        value: function (u, v, si, idx) {
          if (idx == null) v = lastFinite(u.data[si], t, run.x_max);
          return fmtNum(v, s.unit);
        }
      };
      if (stepped) o.paths = stepped;
      series.push(o);
    });
    if (spec.y2) {
      scales.y2 = { range: range(spec, "y2") };
      axes.push({ scale: "y2", side: 1, label: spec.y2, labelSize: 22, size: 52, stroke: "#4b5563", grid: { show: false }, ticks: ticks });
    }
    var data = [t].concat(spec.series.map(function (s) { return s.values; }));
    var first = true;
    var opts = {
      width: Math.max(320, el.clientWidth || 600),
      height: 250,
      scales: scales,
      axes: axes,
      series: series,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      plugins: [overlays(run, spec)],
      hooks: {
        draw: [function (u) {
          if (!first) return;
          first = false;
          el.setAttribute("data-ink", String(ink(u)));
          drawn++;
          document.body.setAttribute("data-charts-drawn", String(drawn));
        }]
      }
    };
    var plot = new uPlot(opts, data, el);
    el.setAttribute("data-chart-id", spec.id);
    el.setAttribute("data-points", String(t.length));
    plots.push({ plot: plot, el: el });
  }

  function drawAll() {
    var data;
    try {
      data = JSON.parse(document.getElementById("surge-data").textContent);
    } catch (e) {
      noteError("chart data: " + e.message);
      return;
    }
    if (typeof uPlot === "undefined") {
      noteError("the chart library did not load");
      return;
    }
    var expected = 0;
    data.runs.forEach(function (run) { expected += run.charts.length; });
    document.body.setAttribute("data-charts-expected", String(expected));
    data.runs.forEach(function (run, ri) {
      run.charts.forEach(function (spec, ci) {
        var el = document.getElementById("chart-" + ri + "-" + ci);
        if (!el) { noteError("no element for chart " + ri + "-" + ci); return; }
        try {
          makeChart(run, spec, el);
        } catch (e) {
          noteError(run.name + ", " + spec.title + ": " + e.message);
        }
      });
    });
    window.addEventListener("resize", function () {
      plots.forEach(function (p) {
        p.plot.setSize({ width: Math.max(320, p.el.clientWidth), height: 250 });
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
