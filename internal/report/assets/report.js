// surge report.html: draws the charts described by the JSON block
// #surge-data with uPlot. Runs before uPlot is loaded so that it also catches
// errors while loading it; drawing starts on DOMContentLoaded.
//
// For checks by a headless browser it sets on <body>:
//   data-charts-expected  charts described by the data
//   data-charts-drawn     charts uPlot has drawn at least once
//   data-js-errors        every JavaScript error and console.error, joined by " | " (empty if none)
//   data-charts-blank     the charts (element id:chart id) whose series put (almost) nothing
//                         on the canvas: no value to draw, or under 5 per mille of ink
// and on each chart's element data-chart-id, data-points (the series' values
// that are not null within the charted time) and data-ink (per mille of the
// plot area that the series changed at the first draw, counted against the
// canvas just before them: bands, grid, rules and markers do not count).
(function () {
  "use strict";
  var errors = [];
  var plots = [];
  // For checks by a headless browser: the uPlot instances, in page order.
  window.surgePlots = plots;
  var drawn = 0;
  var blank = [];

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

  var rowH = 15, bandRow = 17;

  // tagRows lays out the markers' numbered tags in rows so that none
  // overlaps another: each tag is centred on its marker where it can be and
  // goes in the first row (row 0 lies next to the plot) with room. xOf maps
  // a time to pixels; it returns, per marker, [row, left, width] (null when
  // outside [left, left + width]) and the rows used.
  function tagRows(ctx, markers, xOf, left, width, r) {
    var rowRight = [], out = [];
    ctx.font = "bold " + (11 * r) + "px system-ui, sans-serif";
    markers.forEach(function (m) {
      var x = xOf(m.t);
      if (!(x >= left && x <= left + width)) { out.push(null); return; }
      var w = ctx.measureText(String(m.n)).width + 6 * r;
      var lx = Math.min(Math.max(x - w / 2, left), left + width - w);
      var row = 0;
      while (rowRight[row] != null && lx <= rowRight[row] + 2 * r) row++;
      rowRight[row] = lx + w;
      out.push([row, lx, w]);
    });
    return { tags: out, rows: rowRight.length };
  }

  // topPadding is the room above the plot area: a row for the phase names
  // and rows for the markers' tags, so that neither covers the data. The
  // tag rows are laid out on an estimate of the plot's width (a little
  // narrower than the real one, so that the real layout needs no more rows).
  function topPadding(run, el, spec) {
    var rows = 0;
    if (run.markers.length) {
      var plotW = Math.max(320, el.clientWidth || 600) - 58 - (spec.y2 ? 52 : 12) - 8;
      var ctx = document.createElement("canvas").getContext("2d");
      var span = run.x_max - run.x_min || 1;
      rows = tagRows(ctx, run.markers, function (t) { return (t - run.x_min) / span * plotW * 0.96; }, 0, plotW * 0.96, 1).rows;
    }
    return { rows: rows, px: (run.phases.length ? bandRow : 6) + rows * rowH + (rows ? 2 : 0) };
  }

  // overlays draws phase bands behind the series with their names above the
  // plot area, deadlines and μ on top of the series, and the milestones:
  // a light line in the plot and a numbered tag above it.
  function overlays(run, spec, pad) {
    function clampX(u, v) {
      var x = u.valToPos(v, "x", true);
      return Math.min(Math.max(x, u.bbox.left), u.bbox.left + u.bbox.width);
    }
    function label(ctx, text, x, y, color) {
      var r = dpr();
      ctx.font = (11 * r) + "px system-ui, sans-serif";
      var w = ctx.measureText(text).width;
      var pad = 3 * r;
      ctx.textAlign = "left";
      ctx.textBaseline = "alphabetic";
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(x, y - 11 * r, w + 2 * pad, 14 * r);
      ctx.fillStyle = color;
      ctx.fillText(text, x + pad, y);
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
          // Phase names go above the plot area, each centred over its band
          // (pushed right of the name before when bands are narrow), so that
          // no line crosses them and every band gets its name.
          ctx.font = (11 * r) + "px system-ui, sans-serif";
          ctx.textAlign = "left";
          ctx.textBaseline = "alphabetic";
          var right = -Infinity, names = [];
          run.phases.forEach(function (p) {
            var x0 = clampX(u, p.start), x1 = clampX(u, p.end);
            if (x1 <= x0) return;
            var w = ctx.measureText(p.name).width, full = w + 11 * r;
            var x = Math.max((x0 + x1 - full) / 2, 4 * r, right + 8 * r);
            x = Math.min(x, u.ctx.canvas.width - full - 2 * r);
            var y = u.bbox.top - (pad.rows * rowH + 5) * r;
            ctx.fillStyle = p.color.replace(/[\d.]+\)$/, "0.9)");
            ctx.fillRect(x, y - 8 * r, 8 * r, 8 * r);
            ctx.fillStyle = "#4b5563";
            ctx.fillText(p.name, x + 11 * r, y);
            right = x + 11 * r + w;
            names.push(p.name);
          });
          // Scaling events: a thin strip each along the plot's bottom,
          // overlapping ones stacked by row.
          var strips = 0;
          (run.bands || []).forEach(function (b) {
            var x0 = clampX(u, b.start), x1 = Math.max(clampX(u, b.end), x0 + 2 * r);
            var h = 4 * r, y = u.bbox.top + u.bbox.height - (b.row + 1) * (h + 1 * r);
            ctx.fillStyle = b.color;
            ctx.fillRect(x0, y, x1 - x0, h);
            strips++;
          });
          u.root.setAttribute("data-scaling-strips", String(strips));
          u.root.setAttribute("data-band-labels", names.join(","));
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
            label(ctx, rule.label, u.bbox.left + 4 * r, y - 4 * r, "#444");
          });
          // Markers: a light line each from its tag down through the plot,
          // and a numbered tag in the rows above the plot area (the list
          // above the charts gives each number its label and time). Lines
          // go first and the opaque tags over them, so that no line runs
          // through a tag; a tag that fits in none of the rows reserved is
          // left out (its line stays).
          var lay = tagRows(ctx, run.markers, function (t) { return u.valToPos(t, "x", true); }, u.bbox.left, u.bbox.width, r);
          var skipped = 0, tags = [], boxH = rowH - 3;
          function tagTop(row) { return u.bbox.top - ((row + 1) * rowH) * r; }
          run.markers.forEach(function (m, i) {
            var g = lay.tags[i];
            if (!g) return;
            var x = u.valToPos(m.t, "x", true);
            var top = g[0] < pad.rows ? tagTop(g[0]) + boxH * r : u.bbox.top;
            ctx.globalAlpha = 0.55;
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1 * r;
            ctx.setLineDash(m.dash ? m.dash.map(function (d) { return d * r; }) : []);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.globalAlpha = 1;
          });
          ctx.font = "bold " + (11 * r) + "px system-ui, sans-serif";
          run.markers.forEach(function (m, i) {
            var g = lay.tags[i];
            if (!g) return;
            if (g[0] >= pad.rows) { skipped++; return; }
            var lx = g[1], w = g[2], y = tagTop(g[0]);
            ctx.fillStyle = "#fff";
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1 * r;
            ctx.fillRect(lx, y, w, boxH * r);
            ctx.strokeRect(lx, y, w, boxH * r);
            tags.push([Math.round(lx), Math.round(y), Math.round(w), Math.round(boxH * r)].join(","));
            ctx.fillStyle = m.color;
            ctx.textAlign = "center";
            ctx.textBaseline = "middle";
            ctx.fillText(String(m.n), lx + w / 2, y + boxH * r / 2 + 0.5 * r);
          });
          // For checks: where the tags went (x,y,w,h in canvas pixels),
          // how many found no room, and the plot area's top.
          u.root.setAttribute("data-tags", tags.join(" "));
          u.root.setAttribute("data-tags-skipped", String(skipped));
          u.root.setAttribute("data-plot-top", String(Math.round(u.bbox.top)));
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

  // snapshot is the plot area's pixels; seriesInk is the per mille of them
  // that changed since the snapshot taken before the series were drawn:
  // what the series alone put on the canvas (bands, grid, rules, markers
  // and their labels are not counted).
  function snapshot(u) {
    var b = u.bbox, w = Math.floor(b.width), h = Math.floor(b.height);
    if (w <= 0 || h <= 0) return null;
    return u.ctx.getImageData(Math.floor(b.left), Math.floor(b.top), w, h);
  }
  function seriesInk(u, before) {
    var after = snapshot(u);
    if (!before || !after || after.data.length !== before.data.length) return 0;
    var a = after.data, p = before.data, n = 0;
    for (var i = 0; i < a.length; i += 4) {
      if (Math.abs(a[i] - p[i]) + Math.abs(a[i + 1] - p[i + 1]) + Math.abs(a[i + 2] - p[i + 2]) + Math.abs(a[i + 3] - p[i + 3]) > 12) n++;
    }
    return Math.round(1000 * n / (after.width * after.height));
  }

  // pointsDrawn counts the values of every series that can reach the
  // chart: not null, finite, within the charted time.
  function pointsDrawn(t, series, xMin, xMax) {
    var n = 0;
    series.forEach(function (s) {
      for (var i = 0; i < s.values.length; i++) {
        var v = s.values[i];
        if (v != null && isFinite(v) && t[i] >= xMin && t[i] <= xMax) n++;
      }
    });
    return n;
  }

  function makeChart(run, spec, el) {
    var scales = {
      x: { time: false, range: function () { return [run.x_min, run.x_max]; } },
      y: { range: range(spec, "y") }
    };
    if (spec.log) { scales.y.distr = 3; scales.y.log = 10; }
    var grid = { stroke: "#eef0f3" }, ticks = { stroke: "#d1d5db" };
    var pad = topPadding(run, el, spec);
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
    var first = true, before = null;
    var opts = {
      width: Math.max(320, el.clientWidth || 600),
      height: 250 + pad.px,
      padding: [pad.px, null, null, null],
      scales: scales,
      axes: axes,
      series: series,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      plugins: [overlays(run, spec, pad)],
      // These hooks run before the plugin's: drawAxes after the bands and
      // the grid, draw after the series and before the rules and markers.
      hooks: {
        drawAxes: [function (u) {
          if (first) before = snapshot(u);
        }],
        draw: [function (u) {
          if (!first) return;
          first = false;
          var n = seriesInk(u, before);
          el.setAttribute("data-ink", String(n));
          before = null;
          if (n < 5 || pointsDrawn(t, spec.series, run.x_min, run.x_max) === 0) {
            blank.push(el.id + ":" + spec.id);
            document.body.setAttribute("data-charts-blank", blank.join(" "));
          }
          drawn++;
          document.body.setAttribute("data-charts-drawn", String(drawn));
        }]
      }
    };
    var plot = new uPlot(opts, data, el);
    el.setAttribute("data-chart-id", spec.id);
    el.setAttribute("data-points", String(pointsDrawn(t, spec.series, run.x_min, run.x_max)));
    plots.push({ plot: plot, el: el, height: 250 + pad.px });
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
        p.plot.setSize({ width: Math.max(320, p.el.clientWidth), height: p.height });
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
