// The page's modules that need no browser: the state in the URL round-trips, and a group
// taken from a cube has the count, histograms, means and standard deviations computed
// directly from its executions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readState, writeState } from '../../src/assets/state.js';
import { Cube } from '../../src/assets/groups.js';

test('the state in the URL round-trips', () => {
  const s = { a: { duration_ns: [0, 1500], 'begin.arg1': [-3, 7] }, b: { timer_ns: [10, 20] }, log: ['duration_ns'], zoom: 12, q: 'a b&c', brush: 'a' };
  assert.deepEqual(readState(writeState(s), { a: {}, b: {} }), s);
  const d = { a: { duration_ns: [1, 2] }, b: { duration_ns: [3, 4] } };
  assert.deepEqual(readState('', d), { a: d.a, b: d.b, log: [], zoom: 0, q: '', brush: 'b' });
  // Garbage is ignored, not fatal.
  assert.deepEqual(readState('#a=x:y:z,,duration_ns:1:&zoom=abc', d).a, {});
});

test('a group from a cube is its executions', () => {
  // Executions: [bin of the brushed metric (2 bins), bin of metric 2 (3 bins), ns of node 0, ns of node 1 (0: absent)].
  const ex = [[0, 0, 10, 4], [0, 2, 20, 0], [1, 1, 30, 30], [1, 1, 50, 10], [1, 0, 70, 0]];
  const binsOf = [2, 3];
  const h = 5;
  const nodes = 2;
  const row = 1 + h + 3 * nodes;
  const per = Array.from({ length: 2 }, () => new Float64Array(row));
  for (const [b, m2, n0, n1] of ex) {
    const r = per[b];
    r[0] += 1;
    r[1 + b] += 1;
    r[1 + 2 + m2] += 1;
    for (const [k, t] of [[0, n0], [1, n1]]) {
      if (t === 0) continue;
      r[1 + h + k] += t;
      r[1 + h + nodes + k] += t * t;
      r[1 + h + 2 * nodes + k] += 1;
    }
  }
  const f = new Float64Array(3 + 3 * row);
  f.set([2, h, nodes]);
  for (let k = 0; k < 2; k++) for (let j = 0; j < row; j++) f[3 + (k + 1) * row + j] = f[3 + k * row + j] + per[k][j];
  const cube = new Cube(f.buffer);
  for (const [b0, b1] of [[0, 0], [1, 1], [0, 1]]) {
    const g = cube.group(b0, b1, binsOf);
    const mine = ex.filter((e) => e[0] >= b0 && e[0] <= b1);
    assert.equal(g.count, mine.length);
    assert.deepEqual(Array.from(g.hist[1]), [0, 1, 2].map((x) => mine.filter((e) => e[1] === x).length));
    for (const k of [0, 1]) {
      const xs = mine.map((e) => e[2 + k]);
      const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
      const sd = xs.length > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (xs.length - 1)) : 0;
      assert.ok(Math.abs(g.mean[k] - mean) < 1e-9, `mean of node ${k} over [${b0}, ${b1}]`);
      assert.ok(Math.abs(g.sd[k] - sd) < 1e-9, `sd of node ${k} over [${b0}, ${b1}]: ${g.sd[k]} vs ${sd}`);
      assert.equal(g.present[k], xs.filter((x) => x > 0).length);
    }
  }
  assert.throws(() => new Cube(new Float64Array([2, 5, 2, 0]).buffer), /wrong size/);
});
