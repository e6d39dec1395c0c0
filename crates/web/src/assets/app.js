// The page: loads the database summary and the view of the two groups from the server (or
// from the data inlined by `compare --html`, whose columns `local.js` answers the same
// requests from), draws the histograms, the flame graph and the samples, and lets a brush
// redefine a group. While a brush moves, everything is computed
// from the cube of the brushed metric (groups.js), fetched when the pointer enters its
// histogram; when the brush ends, the server's exact view replaces it. `window.tracelens`
// is this page, for tests and benchmarks.

import { humanNs, humanValue, thousands } from 'tl/format.js';
import { readState, writeState } from 'tl/state.js';
import { Histogram } from 'tl/hist.js';
import { FlameGraph } from 'tl/flame.js';
import { Cube } from 'tl/groups.js';
import { loadColumns } from 'tl/local.js';

const $ = (id) => document.getElementById(id);

export async function start() {
  const inlined = $('tl-data');
  const page = new Page(inlined ? JSON.parse(inlined.textContent) : null);
  window.tracelens = page;
  try {
    await page.init();
  } catch (e) {
    page.fail(e);
  }
}

class Page {
  constructor(data) {
    this.data = data;
    this.fileMode = data !== null;
    // In a file, the server's answers computed in the page (null: a file without columns,
    // which does not brush).
    this.local = null;
    this.cubes = new Map();
    this.live = null;
    this.liveStats = null;
    this.seq = 0;
    // The brush's redraws: at most one between two animation frames in the input handler
    // (the first input after a frame: drawn at once, ready for the next frame) and one in the
    // frame's requestAnimationFrame callback for the inputs that came after it (coalesced).
    this.drawnSinceFrame = false;
    // A move came after that first redraw: the frame's callback redraws once more.
    this.dirty = false;
    this.frameRequested = false;
    // The earliest input event (its timestamp) whose result is not yet in a frame.
    this.pendingSince = null;
    // For benchmarks (ms): per frame that shows a brush move, from the earliest such input
    // event to the frame's time (frameStarts: the requestAnimationFrame timestamp of the frame
    // that shows it), to the end of that frame (frameTimings: its style, layout, paint and
    // commit done) and to the end of its redraw (timings); the redraws alone (work); redraws
    // per frame; the times between frames while brushing; the cube and view requests' times;
    // the first view's time from navigation start.
    this.timings = [];
    this.work = [];
    this.frameTimings = [];
    this.redrawsPerFrame = [];
    this.frameStarts = [];
    this.frameIntervals = [];
    this.lastFrame = -Infinity;
    this.cubeTimes = [];
    this.viewTimes = [];
    this.firstView = 0;
    this.views = 0;
  }

  fail(e) {
    $('status').textContent = String(e.message || e);
    document.body.dataset.error = String(e.message || e);
  }

  async api(path, body, binary) {
    if (this.local) return this.local.answer(path, body || {});
    const opts = body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) };
    const r = await fetch(path, opts);
    if (!r.ok) {
      let msg = r.statusText;
      try {
        msg = (await r.json()).error;
      } catch (_) { /* not JSON */ }
      throw new Error(`${path}: ${r.status}: ${msg}`);
    }
    return binary ? r.arrayBuffer() : r.json();
  }

  async init() {
    this.meta = this.fileMode ? this.data.meta : await this.api('/api/meta');
    const meta = this.meta;
    const columns = $('tl-columns');
    if (this.fileMode && this.data.columns && columns) this.local = await loadColumns(meta, this.data.columns, columns.textContent);
    // Without state, the groups of a file are its expressions (no range).
    this.defaults = this.fileMode ? { a: {}, b: {} } : meta.defaults;
    this.brushes = !this.fileMode || this.local !== null;
    this.state = readState(location.hash, this.defaults);
    $('title').textContent = meta.title;
    document.title = `${meta.title}: tracelens`;
    $('summary').textContent = `${thousands(meta.executions)} executions (${meta.delimiter}), ${meta.metrics.length} metrics, ${thousands(meta.parent.length)} calling contexts`;
    this.hists = meta.metrics.map((m, i) => {
      const h = new Histogram($('hists'), m, i, (name) => this.toggleLog(name));
      if (this.brushes) this.brushable(h);
      return h;
    });
    this.flame = new FlameGraph($('flame'), $('tip'), $('flame-info'), meta, (node) => {
      this.state.zoom = node;
      this.saveState();
      this.drawFlame();
    });
    const search = $('search');
    search.value = this.state.q;
    search.addEventListener('input', () => {
      this.state.q = search.value;
      this.saveState();
      this.drawFlame();
    });
    for (const r of document.querySelectorAll('input[name=brush]')) {
      r.checked = r.value === this.state.brush;
      r.addEventListener('change', () => {
        this.state.brush = r.value;
        this.saveState();
      });
    }
    $('reset').addEventListener('click', () => {
      this.state.a = { ...this.defaults.a };
      this.state.b = { ...this.defaults.b };
      this.state.zoom = 0;
      this.saveState();
      this.refresh();
    });
    if (!this.brushes) {
      document.body.classList.add('file');
      for (const id of ['controls', 'help']) $(id).hidden = true;
      this.view = this.data.view;
      this.render();
      this.shown();
      return;
    }
    window.addEventListener('hashchange', () => {
      if (location.hash === writeState(this.state)) return;
      this.state = readState(location.hash, this.defaults);
      search.value = this.state.q;
      this.refresh();
    });
    window.addEventListener('resize', () => {
      for (const h of this.hists) h.resize(true);
      this.flame.boxWidth = 0;
      this.render();
    });
    const plain = (s) => !Object.keys(s.a).length && !Object.keys(s.b).length && !s.log.length;
    if (this.fileMode && plain(this.state)) {
      // The file's own view of its groups, as the server computed it.
      this.view = this.data.view;
      this.render();
      this.shown();
      return;
    }
    await this.refresh();
  }

  request(extra) {
    const known = (g) => Object.fromEntries(Object.entries(g).filter(([k]) => this.meta.metrics.some((m) => m.name === k)));
    return { a: known(this.state.a), b: known(this.state.b), log: this.state.log.filter((k) => this.meta.metrics.some((m) => m.name === k)), ...extra };
  }

  saveState() {
    if (this.brushes) history.replaceState(null, '', writeState(this.state));
    else history.replaceState(null, '', '#' + new URLSearchParams({ zoom: this.state.zoom, q: this.state.q }).toString());
  }

  async refresh() {
    const seq = ++this.seq;
    $('status').textContent = '';
    try {
      const t = performance.now();
      const view = await this.api('/api/view', this.request());
      if (seq !== this.seq) return;
      this.viewTimes.push(performance.now() - t);
      this.view = view;
      this.live = null;
      this.liveStats = null;
      this.render();
      this.shown();
    } catch (e) {
      if (seq === this.seq) this.fail(e);
    }
  }

  // A view is drawn (counted on the body, for tests and benchmarks).
  shown() {
    if (!this.firstView) this.firstView = performance.now();
    this.views++;
    document.body.dataset.views = String(this.views);
  }

  toggleLog(name) {
    const i = this.state.log.indexOf(name);
    if (i >= 0) this.state.log.splice(i, 1);
    else this.state.log.push(name);
    this.saveState();
    this.refresh();
  }

  // The statistics of each group now: the view's, or the brushed group's from its cube.
  groups() {
    const { view, live, liveStats } = this;
    return {
      a: live && live.group === 'a' && liveStats ? liveStats : view.a,
      b: live && live.group === 'b' && liveStats ? liveStats : view.b,
    };
  }

  render() {
    if (!this.view) return;
    this.drawHists();
    this.drawFlame();
    this.drawText();
    this.drawSamples();
  }

  drawHists() {
    const { a, b } = this.groups();
    const { live } = this;
    this.hists.forEach((h, m) => {
      const name = this.meta.metrics[m].name;
      const ranges = this.brushes ? { a: this.state.a[name], b: this.state.b[name] } : {};
      h.draw(this.view.axes[m], a.hist[m], b.hist[m], ranges, live && live.m === m ? live : null);
    });
  }

  drawFlame() {
    const { a, b } = this.groups();
    this.flame.update(a, b, this.state.zoom, this.state.q);
  }

  describe(which) {
    const g = this.state[which];
    const label = this.fileMode ? this.data.labels[which === 'a' ? 0 : 1] : null;
    const parts = Object.entries(g).map(([k, [lo, hi]]) => {
      const m = this.meta.metrics.find((x) => x.name === k);
      return m ? `${k} in [${humanValue(lo, m.unit)}, ${humanValue(hi, m.unit)}]` : null;
    }).filter((x) => x);
    if (label !== null) return [label].concat(parts).join(' and ');
    return parts.length ? parts.join(' and ') : 'all executions';
  }

  drawText() {
    const { a, b } = this.groups();
    const total = this.meta.executions;
    for (const [which, g] of [['a', a], ['b', b]]) {
      const el = $('group-' + which);
      const pct = total ? ((100 * g.count) / total).toFixed(1) : '0';
      el.textContent = `${which.toUpperCase()}: ${thousands(g.count)} executions (${pct}%), mean duration ${humanNs(g.mean[0])}: ${this.describe(which)}`;
      el.dataset.count = String(g.count);
    }
  }

  drawSamples() {
    for (const which of ['a', 'b']) {
      const t = $('samples-' + which);
      const rows = this.view[which].samples;
      const head = '<tr><th>#</th><th>duration</th><th class="trace">trace</th><th>thread</th><th>begin (s)</th></tr>';
      const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
      const body = rows.map((r) => {
        const base = r.trace.split('/').filter((x) => x).pop() || r.trace;
        return `<tr><td>${r.id}</td><td>${r.duration_ns === null ? '' : humanNs(r.duration_ns)}</td><td class="trace" title="${esc(r.trace)}">${esc(base)}</td><td>${r.tid ?? ''}</td><td>${r.begin_ns === null ? '' : (r.begin_ns / 1e9).toFixed(6)}</td></tr>`;
      });
      t.innerHTML = head + body.join('');
    }
  }

  // The cube of (group, metric) for the current state, fetched once.
  cube(group, m) {
    const name = this.meta.metrics[m].name;
    const req = this.request({ group, metric: name });
    const key = JSON.stringify(req);
    let c = this.cubes.get(key);
    if (!c) {
      const t = performance.now();
      c = this.api('/api/cube', req, true).then((buf) => {
        this.cubeTimes.push(performance.now() - t);
        return new Cube(buf);
      });
      c.catch(() => this.cubes.delete(key));
      this.cubes.set(key, c);
      while (this.cubes.size > 6) this.cubes.delete(this.cubes.keys().next().value);
    }
    return c;
  }

  brushable(h) {
    const m = h.index;
    const c = h.canvas;
    c.addEventListener('pointerenter', () => { this.cube(this.state.brush, m).catch(() => {}); });
    c.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !this.view) return;
      e.preventDefault();
      c.setPointerCapture(e.pointerId);
      const bins = this.view.axes[m].edges.length - 1;
      h.place();
      const b = h.binAt(e.clientX, bins);
      this.live = { group: this.state.brush, m, b0: b, b1: b, cube: null };
      this.liveStats = null;
      const live = this.live;
      this.cube(live.group, m).then((cube) => {
        if (this.live !== live) return;
        live.cube = cube;
        this.applyLive();
      }).catch((err) => this.fail(err));
    });
    // pointerrawupdate (Chromium) comes as soon as the pointer moves, pointermove at the next
    // animation frame: the first lets the first move after a frame be drawn before the next.
    const move = 'onpointerrawupdate' in window ? 'pointerrawupdate' : 'pointermove';
    c.addEventListener(move, (e) => {
      const live = this.live;
      if (!live || live.m !== m || live.done) return;
      const b1 = h.binAt(e.clientX, this.view.axes[m].edges.length - 1);
      if (b1 === live.b1) return;
      live.b1 = b1;
      this.moved(e.timeStamp);
    });
    const end = () => {
      const live = this.live;
      if (!live || live.m !== m || live.done) return;
      live.done = true;
      const edges = this.view.axes[m].edges;
      const lo = Math.min(live.b0, live.b1);
      const hi = Math.max(live.b0, live.b1);
      this.state[live.group][this.meta.metrics[m].name] = [edges[lo], edges[hi + 1] - 1];
      this.saveState();
      this.refresh();
    };
    c.addEventListener('pointerup', end);
    c.addEventListener('pointercancel', end);
    c.addEventListener('dblclick', () => {
      delete this.state[this.state.brush][this.meta.metrics[m].name];
      this.saveState();
      this.refresh();
    });
  }

  // A brush move at `since` (an input event's timestamp): drawn now if nothing was drawn
  // since the last animation frame, else in the next frame's callback, once for all moves
  // until then.
  moved(since) {
    if (this.pendingSince === null) this.pendingSince = since;
    if (!this.drawnSinceFrame) {
      this.drawnSinceFrame = true;
      this.applyLive();
    } else {
      this.dirty = true;
    }
    this.requestFrame();
  }

  requestFrame() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame((frameTime) => {
      this.frameRequested = false;
      // Frames asked for one after the other: the frames' period, for the benchmark.
      if (frameTime - this.lastFrame < 50) this.frameIntervals.push(frameTime - this.lastFrame);
      const redraws = (this.drawnSinceFrame ? 1 : 0) + (this.dirty ? 1 : 0);
      if (this.dirty) {
        this.dirty = false;
        this.applyLive();
      }
      this.drawnSinceFrame = false;
      this.lastFrame = frameTime;
      const since = this.pendingSince;
      this.pendingSince = null;
      if (since === null || !this.live || !this.live.cube) return;
      this.timings.push(this.drawnAt - since);
      this.redrawsPerFrame.push(redraws);
      // A task posted now runs once this frame is rendered and committed.
      const ch = new MessageChannel();
      this.frameStarts.push(frameTime - since);
      ch.port1.onmessage = () => this.frameTimings.push(performance.now() - since);
      ch.port2.postMessage(0);
    });
  }

  // Redraws with the brushed group from its cube.
  applyLive() {
    const live = this.live;
    if (!live || !live.cube) {
      if (live) this.drawHists();
      return;
    }
    const start = performance.now();
    const binsOf = this.view.axes.map((x) => x.edges.length - 1);
    if (live.cube.h !== binsOf.reduce((s, x) => s + x, 0)) return;
    this.liveStats = live.cube.group(Math.min(live.b0, live.b1), Math.max(live.b0, live.b1), binsOf, this.liveStats && this.liveStats.hist.length === binsOf.length ? this.liveStats : null);
    this.liveStats.samples = [];
    this.drawHists();
    this.drawFlame();
    this.drawText();
    this.drawnAt = performance.now();
    this.work.push(this.drawnAt - start);
  }
}
