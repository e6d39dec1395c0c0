// The differential flame graph of groups A and B (the TraceCompare thesis, section 4.4.4),
// laid out as `tracelens compare --svg` does: a frame is as wide as its mean inclusive time
// in B; one B never reaches is as wide as its mean in A, dashed, after its siblings (its
// ancestors widen by as much); the colour is z = (mean B - mean A) / sd A. A click zooms
// on a frame (its ancestors stay below it), the search highlights matching frames, and the
// tooltip gives both means, z and how many executions of each group have the frame.

import { humanNs, humanZ, thousands, zColor, zScore } from 'tl/format.js';

const FH = 17;
const MATCH = 'rgb(190,70,230)';

export class FlameGraph {
  constructor(canvas, tip, info, meta, onZoom) {
    this.canvas = canvas;
    this.tip = tip;
    this.info = info;
    this.name = meta.name;
    this.parent = meta.parent;
    const n = meta.parent.length;
    this.n = n;
    // Children by name, once.
    const kids = Array.from({ length: n }, () => []);
    for (let k = 1; k < n; k++) kids[meta.parent[k]].push(k);
    for (const list of kids) list.sort((x, y) => (meta.name[x] < meta.name[y] ? -1 : meta.name[x] > meta.name[y] ? 1 : x - y));
    this.kids = kids;
    this.width = new Float64Array(n);
    this.frames = [];
    this.onZoom = onZoom;
    canvas.addEventListener('mousemove', (e) => this.hover(e));
    canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    canvas.addEventListener('click', (e) => {
      const f = this.frameAt(e);
      if (f) this.onZoom(f.node);
    });
  }

  // a, b: {count, mean, sd, present} per node; zoom: the node drawn full width; q: search.
  update(a, b, zoom, q) {
    this.a = a;
    this.b = b;
    const { n, kids, width } = this;
    const present = (k) => a.present[k] > 0 || b.present[k] > 0;
    const absent = (k) => !(b.mean[k] > 0);
    for (let k = n - 1; k >= 0; k--) {
      const own = k === 0 ? b.mean[0] : b.mean[k] > 0 ? b.mean[k] : a.mean[k];
      let extra = 0;
      let inner = 0;
      for (const c of kids[k]) {
        if (!present(c)) continue;
        inner += width[c];
        if (absent(c)) extra += width[c];
      }
      width[k] = k === 0 || !absent(k) ? Math.max(own + extra, inner) : Math.max(own, inner);
      if (k !== 0 && !present(k)) width[k] = 0;
    }
    if (!(zoom > 0 && zoom < n && present(zoom))) zoom = 0;
    this.zoom = zoom;
    const chain = [];
    for (let k = zoom; k !== 0; k = this.parent[k]) chain.push(k);
    chain.push(0);
    chain.reverse();
    // Depth of the zoomed subtree.
    let deepest = 0;
    const st = [[zoom, 0]];
    while (st.length) {
      const [k, d] = st.pop();
      if (d > deepest) deepest = d;
      for (const c of kids[k]) if (present(c)) st.push([c, d + 1]);
    }
    const rows = chain.length + deepest;
    if (!this.boxWidth) this.boxWidth = this.canvas.parentElement.clientWidth - 2;
    const cw = Math.max(300, this.boxWidth);
    const ch = rows * FH + 4;
    const r = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(cw * r) || this.canvas.height !== Math.round(ch * r)) {
      this.canvas.width = Math.round(cw * r);
      this.canvas.height = Math.round(ch * r);
      this.canvas.style.width = cw + 'px';
      this.canvas.style.height = ch + 'px';
    }
    const g = this.canvas.getContext('2d');
    g.setTransform(r, 0, 0, r, 0, 0);
    g.clearRect(0, 0, cw, ch);
    g.font = '11px monospace';
    g.textBaseline = 'middle';
    const charW = this.charW || (this.charW = g.measureText('m').width || 7);
    const needle = q ? q.toLowerCase() : '';
    const frames = [];
    const total = Math.max(width[zoom], 1);
    const scale = cw / total;
    let matched = 0;
    const put = (k, x, w, row, under) => {
      const y = ch - 2 - (row + 1) * FH;
      const z = k === 0 ? 0 : zScore(a.mean[k], b.mean[k], a.sd[k]);
      const isMatch = needle !== '' && k !== 0 && this.name[k].toLowerCase().includes(needle);
      if (isMatch && !under) matched += width[k];
      const fill = k === 0 ? 'rgb(200,200,190)' : zColor(z);
      g.fillStyle = isMatch ? MATCH : fill;
      g.fillRect(x, y, Math.max(w - 0.5, 0.5), FH - 1);
      const dashed = k !== 0 && absent(k);
      if (dashed) {
        g.save();
        g.setLineDash([3, 2]);
        g.strokeStyle = '#23a';
        g.strokeRect(x + 0.5, y + 0.5, Math.max(w - 1.5, 0.5), FH - 2);
        g.restore();
      }
      const chars = Math.floor((w - 6) / charW);
      if (chars >= 3) {
        const name = this.name[k];
        g.fillStyle = '#000';
        g.fillText(name.length > chars ? name.slice(0, chars - 2) + '..' : name, x + 3, y + FH / 2);
      }
      frames.push({ node: k, name: this.name[k], x, y, w, z, fill, match: isMatch, absent: dashed });
      return isMatch || under;
    };
    // The zoomed node's ancestors, full width, below it.
    for (let i = 0; i < chain.length - 1; i++) put(chain[i], 0, cw, i, true);
    const stack = [[zoom, 0, chain.length - 1, false]];
    while (stack.length) {
      const [k, x, row, under] = stack.pop();
      const w = width[k] * scale;
      if (w < 0.3) continue;
      const m = put(k, x, w, row, under);
      const list = kids[k].filter(present);
      const inB = list.filter((c) => !absent(c));
      const onlyA = list.filter(absent);
      let cx = x;
      const placed = [];
      for (const c of inB.concat(onlyA)) {
        placed.push([c, cx, row + 1, m]);
        cx += width[c] * scale;
      }
      for (let i = placed.length - 1; i >= 0; i--) stack.push(placed[i]);
    }
    this.frames = frames;
    const share = needle ? `; "${q}" matches ${((100 * matched) / total).toFixed(1)}% of the width` : '';
    const info = (zoom ? `zoomed on ${this.name[zoom]} (click the bottom frame to zoom out)` : 'click a frame to zoom') + share;
    // Unchanged text is not set again (no layout while brushing).
    if (info !== this.infoText) this.info.textContent = this.infoText = info;
    this.matched = needle ? matched / total : 0;
  }

  frameAt(e) {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top;
    for (let i = this.frames.length - 1; i >= 0; i--) {
      const f = this.frames[i];
      if (x >= f.x && x < f.x + f.w && y >= f.y && y < f.y + FH) return f;
    }
    return null;
  }

  path(k) {
    const p = [];
    for (; k !== 0; k = this.parent[k]) p.push(this.name[k]);
    return p.reverse().join(' > ') || 'all: the whole execution';
  }

  hover(e) {
    const f = this.frameAt(e);
    if (!f) {
      this.tip.hidden = true;
      return;
    }
    const { a, b } = this;
    const k = f.node;
    const lines = [
      this.path(k),
      `B: ${humanNs(b.mean[k])} mean, in ${thousands(b.present[k])} of ${thousands(b.count)} executions`,
      `A: ${humanNs(a.mean[k])} mean (sd ${humanNs(a.sd[k])}), in ${thousands(a.present[k])} of ${thousands(a.count)} executions`,
      `z = ${humanZ(f.z)}`,
    ];
    this.tip.textContent = lines.join('\n');
    this.tip.hidden = false;
    const box = this.canvas.parentElement.getBoundingClientRect();
    this.tip.style.left = Math.min(e.clientX - box.left + 12, box.width - 360) + 'px';
    this.tip.style.top = e.clientY - box.top + 16 + 'px';
  }
}
