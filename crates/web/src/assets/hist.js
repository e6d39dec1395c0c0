// One metric's histogram on a canvas: all executions in grey, group A in blue and group B in
// red, each scaled to its own peak so that their shapes compare; under it, the ranges that
// define A and B. Its bins are those of the server (equal widths on a linear or log axis).

import { humanValue } from 'tl/format.js';

const PAD = 6;
const TOP = 4;
const BAND = 12;
const LABELS = 14;

export class Histogram {
  constructor(parent, metric, index, onLog) {
    this.metric = metric;
    this.index = index;
    this.root = document.createElement('div');
    this.root.className = 'hist';
    this.root.dataset.metric = metric.name;
    const head = document.createElement('div');
    head.className = 'hist-head';
    const name = document.createElement('span');
    name.className = 'hist-name';
    name.textContent = metric.name;
    name.title = metric.description;
    this.log = document.createElement('button');
    this.log.className = 'log';
    this.log.textContent = 'log';
    this.log.title = 'log axis';
    this.log.addEventListener('click', () => onLog(metric.name));
    this.count = document.createElement('span');
    this.count.className = 'hist-count';
    head.append(name, this.count, this.log);
    this.canvas = document.createElement('canvas');
    this.root.append(head, this.canvas);
    parent.append(this.root);
    this.width = 0;
    this.height = 0;
  }

  // Sizes the canvas to its box; reads the layout only when asked (`force`) or the first
  // time, never while brushing.
  resize(force) {
    if (this.width && !force) return;
    const w = Math.max(120, this.root.clientWidth - 10);
    const h = 96;
    if (w !== this.width || h !== this.height) {
      const r = window.devicePixelRatio || 1;
      this.canvas.width = Math.round(w * r);
      this.canvas.height = Math.round(h * r);
      this.canvas.style.width = w + 'px';
      this.canvas.style.height = h + 'px';
      this.width = w;
      this.height = h;
    }
  }

  // Remembers where the canvas is (at the start of a brush).
  place() {
    this.left = this.canvas.getBoundingClientRect().left;
  }

  // The bin under a pointer at clientX (after place()).
  binAt(clientX, bins) {
    const x = clientX - this.left - PAD;
    const w = (this.width - 2 * PAD) / bins;
    return Math.max(0, Math.min(bins - 1, Math.floor(x / w)));
  }

  // The bins [b0, b1] of the values lo..hi.
  static binsOf(edges, lo, hi) {
    let b0 = 0;
    while (b0 < edges.length - 2 && edges[b0 + 1] <= lo) b0++;
    let b1 = edges.length - 2;
    while (b1 > 0 && edges[b1] > hi) b1--;
    return [b0, b1];
  }

  // axis: {scale, edges, all}; a, b: histograms (or null); ranges: {a, b} as [lo, hi] or
  // undefined; live: {group, b0, b1} while brushing here.
  draw(axis, a, b, ranges, live) {
    this.resize();
    this.log.classList.toggle('on', axis.scale === 'log');
    const r = window.devicePixelRatio || 1;
    const g = this.canvas.getContext('2d');
    g.setTransform(r, 0, 0, r, 0, 0);
    g.clearRect(0, 0, this.width, this.height);
    const bins = axis.edges.length - 1;
    if (this.metric.min === this.metric.max) {
      g.fillStyle = '#777';
      g.font = '11px sans-serif';
      g.textAlign = 'center';
      g.textBaseline = 'middle';
      g.fillText(`every execution: ${humanValue(this.metric.min, this.metric.unit)}`, this.width / 2, this.height / 2);
      return;
    }
    const plotH = this.height - TOP - BAND - LABELS;
    const bw = (this.width - 2 * PAD) / bins;
    const bar = (hist, style, inset) => {
      if (!hist) return;
      let max = 0;
      for (let k = 0; k < bins; k++) if (hist[k] > max) max = hist[k];
      if (max === 0) return;
      g.fillStyle = style;
      for (let k = 0; k < bins; k++) {
        if (hist[k] === 0) continue;
        const h = Math.max(1, (hist[k] / max) * plotH);
        g.fillRect(PAD + k * bw + inset, TOP + plotH - h, Math.max(1, bw - 2 * inset), h);
      }
    };
    bar(axis.all, 'rgb(225,225,220)', 0);
    bar(a, 'rgba(40,90,220,0.55)', 0);
    bar(b, 'rgba(220,40,40,0.55)', bw > 4 ? 1 : 0);
    const band = (group, y, style) => {
      let range = null;
      if (live && live.group === group) range = [Math.min(live.b0, live.b1), Math.max(live.b0, live.b1)];
      else if (ranges[group]) range = Histogram.binsOf(axis.edges, ranges[group][0], ranges[group][1]);
      if (!range) return;
      g.fillStyle = style;
      g.fillRect(PAD + range[0] * bw, y, (range[1] - range[0] + 1) * bw, BAND / 2 - 1);
      if (live && live.group === group) {
        g.fillStyle = group === 'a' ? 'rgba(40,90,220,0.12)' : 'rgba(220,40,40,0.12)';
        g.fillRect(PAD + range[0] * bw, TOP, (range[1] - range[0] + 1) * bw, plotH);
      }
    };
    band('a', TOP + plotH + 1, 'rgb(40,90,220)');
    band('b', TOP + plotH + 1 + BAND / 2, 'rgb(220,40,40)');
    g.fillStyle = '#555';
    g.font = '10px sans-serif';
    g.textBaseline = 'bottom';
    g.textAlign = 'left';
    g.fillText(humanValue(axis.edges[0], this.metric.unit), PAD, this.height);
    g.textAlign = 'right';
    g.fillText(humanValue(axis.edges[bins] - 1, this.metric.unit), this.width - PAD, this.height);
  }
}
