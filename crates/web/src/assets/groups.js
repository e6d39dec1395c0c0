// A brushed group from a cube (see the server's `model` module): the cube holds, for each
// bin of the brushed metric, prefix sums over the bins before it of the group's count, every
// metric's histogram and every node's sum, sum of squares and presence. The group whose
// range on the brushed metric is the bins [b0, b1] is row b1 + 1 minus row b0: its
// histograms, and per node its mean and standard deviation (an execution without the node
// counts 0), in time proportional to the bins and nodes, whatever the executions.

export class Cube {
  constructor(buffer) {
    const f = new Float64Array(buffer);
    this.bins = f[0];
    this.h = f[1];
    this.nodes = f[2];
    this.row = 1 + this.h + 3 * this.nodes;
    this.data = f.subarray(3);
    if (this.data.length !== (this.bins + 1) * this.row) throw new Error('a cube of the wrong size');
  }

  // The group of bins [b0, b1]: {count, hist: [per metric], mean, sd, present}; binsOf
  // lists the bins of each metric.
  group(b0, b1, binsOf, out) {
    const { data, row, h, nodes } = this;
    const hi = (b1 + 1) * row;
    const lo = b0 * row;
    const n = data[hi] - data[lo];
    out = out || {
      hist: binsOf.map((k) => new Float64Array(k)),
      mean: new Float64Array(nodes),
      sd: new Float64Array(nodes),
      present: new Float64Array(nodes),
    };
    out.count = n;
    let o = 1;
    for (let m = 0; m < binsOf.length; m++) {
      const hm = out.hist[m];
      for (let k = 0; k < binsOf[m]; k++, o++) hm[k] = data[hi + o] - data[lo + o];
    }
    const s = 1 + h;
    const q = s + nodes;
    const p = q + nodes;
    for (let k = 0; k < nodes; k++) {
      const sum = data[hi + s + k] - data[lo + s + k];
      const mean = n > 0 ? sum / n : 0;
      out.mean[k] = mean;
      const sq = data[hi + q + k] - data[lo + q + k];
      out.sd[k] = n > 1 ? Math.sqrt(Math.max(0, (sq - n * mean * mean) / (n - 1))) : 0;
      out.present[k] = data[hi + p + k] - data[lo + p + k];
    }
    return out;
  }
}
