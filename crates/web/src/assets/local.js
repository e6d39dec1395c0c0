// The server's aggregation (`crates/web/src/model.rs`) in the page, for the self-contained
// file of `tracelens compare --html`: from the executions' columns inlined in the file
// (`crates/web/src/html.rs` says how), the same answers as the server's /api/view and
// /api/cube, so that the file brushes as the served page does. A group is the executions
// its expression selected (when the file was written) within all its ranges.

const SAMPLES = 20;
const NO_BIN = 255;

// The columns of the file: `info` (the sections, edges and traces) and the text of the
// gzip-compressed, base64-encoded bytes.
export async function loadColumns(meta, info, text) {
  const b64 = text.replace(/\s+/g, '');
  let bytes;
  if (Uint8Array.fromBase64) {
    bytes = Uint8Array.fromBase64(b64);
  } else {
    const s = atob(b64);
    bytes = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Local(meta, info, await new Response(stream).arrayBuffer());
}

export class Local {
  constructor(meta, info, buffer) {
    this.meta = meta;
    this.n = info.n;
    const col = {};
    for (const [name, kind, offset, len] of info.sections) {
      const T = kind === 'f64' ? Float64Array : kind === 'u32' ? Uint32Array : Uint8Array;
      if (offset + len * T.BYTES_PER_ELEMENT > buffer.byteLength) throw new Error(`the file's column ${name} is cut short`);
      col[name] = new T(buffer, offset, len);
    }
    this.values = meta.metrics.map((_, m) => col['value.' + m]);
    for (const k of ['offsets', 'nodes', 'ns', 'duration', 'tid', 'begin', 'trace', 'groups']) this[k] = col[k];
    this.edges = info.edges;
    this.traces = info.traces;
    this.nodeCount = meta.parent.length;
    this.binnedCache = new Map();
  }

  // An answer of the server's API: path and request body as the page sends them.
  answer(path, body) {
    const req = this.parse(body);
    if (path === '/api/view' && req.group === undefined) return this.view(req);
    if (path === '/api/cube' && req.group !== undefined) return this.cube(req).buffer;
    throw new Error(`${path}: not a request this file answers`);
  }

  metricIndex(name) {
    const m = this.meta.metrics.findIndex((x) => x.name === name);
    if (m < 0) throw new Error(`unknown metric \`${name}\``);
    return m;
  }

  // {a: {METRIC: [LO, HI]}, b, log: [METRIC], group, metric} as indexes and integer ranges.
  parse(body) {
    const ranges = (g) => Object.entries(g || {}).map(([name, [lo, hi]]) => [this.metricIndex(name), Math.ceil(lo), Math.floor(hi)]);
    const req = { a: ranges(body.a), b: ranges(body.b), log: new Set((body.log || []).map((x) => this.metricIndex(x))) };
    if (body.group !== undefined) {
      req.group = body.group;
      req.metric = this.metricIndex(body.metric);
    }
    return req;
  }

  // Metric m's bins on `scale`: {edges, index (per execution, NO_BIN without a value), all}.
  binned(m, scale) {
    const key = `${m}:${scale}`;
    let b = this.binnedCache.get(key);
    if (b) return b;
    const edges = this.edges[m][scale === 'log' ? 1 : 0];
    const bins = edges.length - 1;
    const v = this.values[m];
    const index = new Uint8Array(this.n);
    const all = new Array(bins).fill(0);
    for (let i = 0; i < this.n; i++) {
      const x = v[i];
      if (Number.isNaN(x)) {
        index[i] = NO_BIN;
        continue;
      }
      // The number of edges at or below x, less one, within the bins.
      let lo = 0;
      let hi = edges.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (edges[mid] <= x) lo = mid + 1;
        else hi = mid;
      }
      const k = Math.min(Math.max(lo - 1, 0), bins - 1);
      index[i] = k;
      all[k]++;
    }
    b = { edges, index, all };
    this.binnedCache.set(key, b);
    return b;
  }

  allBinned(req) {
    return this.meta.metrics.map((_, m) => this.binned(m, req.log.has(m) ? 'log' : 'linear'));
  }

  // The executions of group `which` (1: in, 0: out), leaving out its range on `except`.
  select(which, ranges, except) {
    const bit = which === 'a' ? 1 : 2;
    const keep = new Uint8Array(this.n);
    const rs = ranges.filter(([m]) => m !== except).map(([m, lo, hi]) => [this.values[m], lo, hi]);
    for (let i = 0; i < this.n; i++) {
      if (!(this.groups[i] & bit)) continue;
      let ok = 1;
      for (const [v, lo, hi] of rs) {
        const x = v[i];
        if (!(x >= lo && x <= hi)) {
          ok = 0;
          break;
        }
      }
      keep[i] = ok;
    }
    return keep;
  }

  view(req) {
    const binned = this.allBinned(req);
    const axes = binned.map((b, m) => ({ scale: req.log.has(m) ? 'log' : 'linear', edges: b.edges, all: b.all }));
    return { axes, a: this.stats(this.select('a', req.a, -1), binned), b: this.stats(this.select('b', req.b, -1), binned) };
  }

  // A group's count, per node mean, standard deviation and presence (an execution without
  // the node counts 0; two passes, as `tracelens_compare::node_stats`), histograms and
  // samples.
  stats(keep, binned) {
    const { offsets, nodes, ns, duration } = this;
    const N = this.nodeCount;
    const sum = new Float64Array(N);
    const present = new Float64Array(N);
    const hist = binned.map((b) => new Array(b.edges.length - 1).fill(0));
    let n = 0;
    for (let i = 0; i < this.n; i++) {
      if (!keep[i]) continue;
      n++;
      for (let p = offsets[i]; p < offsets[i + 1]; p++) {
        sum[nodes[p]] += ns[p];
        present[nodes[p]]++;
      }
      if (!Number.isNaN(duration[i])) {
        sum[0] += duration[i];
        present[0]++;
      }
      for (let m = 0; m < binned.length; m++) {
        const x = binned[m].index[i];
        if (x !== NO_BIN) hist[m][x]++;
      }
    }
    const mean = Array.from(sum, (s) => (n ? s / n : 0));
    const m2 = new Float64Array(N);
    for (let i = 0; i < this.n; i++) {
      if (!keep[i]) continue;
      for (let p = offsets[i]; p < offsets[i + 1]; p++) {
        const d = ns[p] - mean[nodes[p]];
        m2[nodes[p]] += d * d;
      }
      if (!Number.isNaN(duration[i])) {
        const d = duration[i] - mean[0];
        m2[0] += d * d;
      }
    }
    const sd = Array.from(m2, (x, k) => (n < 2 ? 0 : Math.sqrt((x + (n - present[k]) * mean[k] * mean[k]) / (n - 1))));
    return { count: n, mean, sd, present: Array.from(present), hist, samples: this.samples(keep, n) };
  }

  // Up to SAMPLES executions evenly spread over the group's durations, slowest first (by
  // decreasing duration, then decreasing index), as the server picks them.
  samples(keep, n) {
    const ids = new Uint32Array(n);
    let j = 0;
    for (let i = 0; i < this.n; i++) if (keep[i]) ids[j++] = i;
    const dur = (i) => (Number.isNaN(this.duration[i]) ? -Infinity : this.duration[i]);
    ids.sort((x, y) => dur(y) - dur(x) || y - x);
    const picks = n <= SAMPLES ? Array.from({ length: n }, (_, k) => k) : Array.from({ length: SAMPLES }, (_, k) => Math.floor((k * (n - 1)) / (SAMPLES - 1)));
    const num = (x) => (Number.isNaN(x) ? null : x);
    return picks.map((k) => {
      const i = ids[k];
      const t = this.trace[i];
      return { id: i, trace: t < this.traces.length ? this.traces[t] : '', tid: num(this.tid[i]), begin_ns: num(this.begin[i]), duration_ns: num(this.duration[i]) };
    });
  }

  // The cube of group `req.group` brushed on metric `req.metric`, as the server's
  // `Model::cube` lays it out: bins, H, N, then bins + 1 rows of prefix sums of the count,
  // every metric's histogram and every node's sum, sum of squares and presence.
  cube(req) {
    const binned = this.allBinned(req);
    const m = req.metric;
    const keep = this.select(req.group, req.group === 'a' ? req.a : req.b, m);
    const bm = binned[m].index;
    const bins = binned[m].edges.length - 1;
    const starts = [];
    let h = 0;
    for (const b of binned) {
      starts.push(1 + h);
      h += b.edges.length - 1;
    }
    const N = this.nodeCount;
    const row = 1 + h + 3 * N;
    const acc = new Float64Array(bins * row);
    const { offsets, nodes, ns, duration } = this;
    const s = 1 + h;
    // Node k's time t into the row at r: its sum, sum of squares and presence.
    const add = (r, k, t) => {
      acc[r + s + k] += t;
      acc[r + s + N + k] += t * t;
      acc[r + s + 2 * N + k]++;
    };
    for (let i = 0; i < this.n; i++) {
      const b = bm[i];
      if (b === NO_BIN || !keep[i]) continue;
      const r = b * row;
      acc[r]++;
      for (let j = 0; j < binned.length; j++) {
        const x = binned[j].index[i];
        if (x !== NO_BIN) acc[r + starts[j] + x]++;
      }
      if (!Number.isNaN(duration[i])) add(r, 0, duration[i]);
      for (let p = offsets[i]; p < offsets[i + 1]; p++) add(r, nodes[p], ns[p]);
    }
    const out = new Float64Array(3 + (bins + 1) * row);
    out[0] = bins;
    out[1] = h;
    out[2] = N;
    for (let k = 0; k < bins; k++) {
      const prev = 3 + k * row;
      const next = prev + row;
      for (let x = 0; x < row; x++) out[next + x] = out[prev + x] + acc[k * row + x];
    }
    return out;
  }
}
