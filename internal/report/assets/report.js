// surge report.html: draws the charts described by the JSON block
// #surge-data with uPlot. Runs before uPlot is loaded so that it also catches
// errors while loading it; drawing starts on DOMContentLoaded.
//
// For checks by a headless browser it sets on <body>:
//   data-charts-expected  charts described by the data
//   data-charts-drawn     charts uPlot has drawn at least once
//   data-js-errors        every JavaScript error, joined by " | " (empty if none)
(function () {
  "use strict";
  var errors = [];
  var plots = [];
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
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, r = dpr();
          ctx.save();
          ctx.font = (11 * r) + "px system-ui, sans-serif";
          run.phases.forEach(function (p) {
            var x0 = clampX(u, p.start), x1 = clampX(u, p.end);
            if (x1 - x0 > ctx.measureText(p.name).width + 10 * r) {
              label(ctx, p.name, x0 + 2 * r, u.bbox.top + u.bbox.height - 5 * r, "#6b7280", false);
            }
          });
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
          run.markers.forEach(function (m, j) {
            var x = u.valToPos(m.t, "x", true);
            if (!(x >= u.bbox.left && x <= u.bbox.left + u.bbox.width)) return;
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 2 * r;
            ctx.setLineDash(m.dash ? m.dash.map(function (d) { return d * r; }) : []);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.setLineDash([]);
            var right = x > u.bbox.left + u.bbox.width * 0.7;
            label(ctx, m.label, right ? x - 3 * r : x + 3 * r, u.bbox.top + (14 + 16 * j) * r, m.color, right);
          });
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

  function makeChart(run, spec, el) {
    var scales = {
      x: { time: false, range: function () { return [run.x_min, run.x_max]; } },
      y: { range: range(spec, "y") }
    };
    if (spec.log) { scales.y.distr = 3; scales.y.log = 10; }
    var axes = [
      { label: "seconds since run start", labelSize: 20, stroke: "#4b5563", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#d1d5db" } },
      { label: spec.y, labelSize: 22, size: 58, stroke: "#4b5563", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#d1d5db" } }
    ];
    var series = [{ label: "time", value: function (u, v) { return v == null ? "—" : v.toFixed(0) + " s"; } }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label,
        stroke: s.color,
        width: 1.75,
        dash: s.dash || undefined,
        scale: s.scale,
        spanGaps: false,
        points: { show: false },
        value: function (u, v) { return fmtNum(v, s.unit); }
      });
    });
    if (spec.y2) {
      scales.y2 = { range: range(spec, "y2") };
      axes.push({ scale: "y2", side: 1, label: spec.y2, labelSize: 22, size: 52, stroke: "#4b5563", grid: { show: false }, ticks: { stroke: "#d1d5db" } });
    }
    var data = [spec.t || run.t].concat(spec.series.map(function (s) { return s.values; }));
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
        draw: [function () {
          if (!first) return;
          first = false;
          drawn++;
          document.body.setAttribute("data-charts-drawn", String(drawn));
        }]
      }
    };
    plots.push({ plot: new uPlot(opts, data, el), el: el });
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
