// The page of `tracelens serve` in a real browser: Debian's chromium driven by
// playwright-core (no browser download) under `node --test`.
//
//   TRACELENS_BIN=target/release/tracelens TRACELENS_DB=runs.db node --test crates/web/tests/browser/
//
// The oracle for the groups is `tracelens compare --json` (expressions evaluated by the
// compare crate, not the page's ranges); for the colours, identical groups (every z is 0)
// and the culprit `compare` names (red). TRACELENS_EXPECT (comma-separated frame names)
// says what the culprit's path must hold when the database comes from a case-study
// recording. CHROMIUM is the browser (default /usr/bin/chromium).
// `crates/cli/tests/web_browser.rs` builds the database and runs these tests.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as drive from './drive.mjs';

const BIN = process.env.TRACELENS_BIN;
const DB = process.env.TRACELENS_DB;
const EXPECT = (process.env.TRACELENS_EXPECT || '').split(',').filter((x) => x);
if (!BIN || !DB) throw new Error('set TRACELENS_BIN and TRACELENS_DB');

const compare = (a, b) => JSON.parse(execFileSync(BIN, ['compare', DB, '--a', a, '--b', b, '--json'], { maxBuffer: 1 << 28 }).toString());

let server;
let url;
let browser;
let scratch;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'tracelens-web-'));
  server = spawn(BIN, ['serve', DB, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`tracelens serve exited (${code}): ${out}`)));
  });
  browser = await drive.launch();
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function open(at) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.errors = errors;
  await page.goto(at);
  await page.waitForFunction(() => window.tracelens && window.tracelens.flame && window.tracelens.flame.frames.length > 0, null, { timeout: 60000 });
  return page;
}

const counts = (page) => page.evaluate(() => ['a', 'b'].map((g) => Number(document.getElementById('group-' + g).dataset.count)));
const frames = (page) => page.evaluate(() => window.tracelens.flame.frames.map((f) => ({ ...f })));
const rgb = (s) => s.match(/\d+/g).map(Number);
const isRed = ([r, g, b]) => r > g + 40 && r > b + 40;
const NEUTRAL = 'rgb(221,221,210)';

// The colour drawn at (x, y) of the flame graph canvas, in CSS pixels.
const pixel = (page, x, y) => page.evaluate(([x, y]) => {
  const c = document.getElementById('flame');
  const r = window.devicePixelRatio || 1;
  return Array.from(c.getContext('2d').getImageData(Math.round(x * r), Math.round(y * r), 1, 1).data).slice(0, 3);
}, [x, y]);

// The node `compare` says explains most of B's extra time, for the default groups.
function culprit() {
  const c = compare('duration<=p50', 'duration>=p90');
  assert.ok(c.explain.length > 0, 'compare names a culprit');
  return c.nodes[c.explain[0]];
}

// Drags across `metric`'s histogram from fraction `from` to `to` of its width with group
// `group` brushed; returns the group's count just before the release (from the cube).
const brush = (page, group, metric, from, to) => drive.brush(page, group, metric, Array.from({ length: 11 }, (_, i) => from + ((to - from) * i) / 10));

test('the default groups are the median and the slowest tenth', async () => {
  const page = await open(url);
  const c = compare('duration<=p50', 'duration>=p90');
  assert.deepEqual(await counts(page), [c.a.count, c.b.count]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the culprit of a slow group is red', async () => {
  const page = await open(url);
  const node = culprit();
  for (const name of EXPECT) assert.ok(node.path.includes(name), `the culprit ${node.path.join(' > ')} holds ${name}`);
  const f = (await frames(page)).find((x) => x.node === node.node);
  assert.ok(f, `the culprit ${node.path.join(' > ')} is drawn`);
  assert.ok(f.z >= 1, `z = ${f.z}`);
  assert.ok(isRed(rgb(f.fill)), f.fill);
  assert.ok(isRed(await pixel(page, f.x + f.w / 2, f.y + 1.5)), 'drawn red on the canvas');
  await page.close();
});

test('brushing sets a group: its count and the flame graph follow', async () => {
  const page = await open(url);
  const before = await counts(page);
  // A and B both every execution: no frame differs.
  await brush(page, 'a', 'duration_ns', 0, 1);
  const all = await brush(page, 'b', 'duration_ns', 0, 1);
  const n = await page.evaluate(() => window.tracelens.meta.executions);
  assert.equal(all, n, 'the brushed count, from the cube');
  assert.deepEqual(await counts(page), [n, n]);
  const same = await frames(page);
  assert.ok(same.length > 1);
  for (const f of same) assert.ok(f.z === 0 && (f.node === 0 || f.fill === NEUTRAL), `${f.name}: z ${f.z} ${f.fill}`);
  // B: the slower part of the axis.
  const live = await brush(page, 'b', 'duration_ns', 0.3, 1);
  const [, b] = await counts(page);
  assert.equal(live, b, 'the count while brushing (cube) is the exact count after');
  assert.ok(b < n && b > 0, `B: ${b} of ${n}`);
  const [lo, hi] = await page.evaluate(() => window.tracelens.state.b.duration_ns);
  const oracle = compare('all', `duration>=${lo} && duration<=${hi}`);
  assert.equal(b, oracle.b.count, `B = duration in [${lo}, ${hi}]`);
  assert.ok((await frames(page)).some((f) => isRed(rgb(f.fill))), 'the slow part spends more somewhere');
  assert.notDeepEqual(await counts(page), before);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('search highlights the frames it matches', async () => {
  const page = await open(url);
  const node = culprit();
  const name = node.path[node.path.length - 1];
  await page.fill('#search', name);
  await page.waitForFunction(() => window.tracelens.flame.frames.some((f) => f.match));
  const fs = await frames(page);
  const f = fs.find((x) => x.node === node.node);
  assert.ok(f.match);
  for (const g of fs) assert.equal(g.match, g.name.toLowerCase().includes(name.toLowerCase()) && g.node !== 0, g.name);
  assert.deepEqual(await pixel(page, f.x + f.w / 2, f.y + 1.5), [190, 70, 230], 'drawn purple');
  assert.match(await page.textContent('#flame-info'), /matches \d+\.\d% of the width/);
  await page.close();
});

test('the tooltip gives both means, z and counts', async () => {
  const page = await open(url);
  const node = culprit();
  const f = (await frames(page)).find((x) => x.node === node.node);
  await page.locator('#flame').hover({ position: { x: f.x + f.w / 2, y: f.y + 8 } });
  await page.waitForSelector('#tip:not([hidden])');
  const tip = await page.textContent('#tip');
  assert.ok(tip.startsWith(node.path.join(' > ')), tip);
  assert.match(tip, /B: .* mean, in [\d,]+ of [\d,]+ executions/);
  assert.match(tip, /A: .* mean \(sd .*\), in [\d,]+ of [\d,]+ executions/);
  assert.match(tip, /z = (\+inf|\+\d+\.\d\d)/);
  await page.close();
});

test('a click zooms, and the URL reopens the same view', async () => {
  const page = await open(url);
  await brush(page, 'b', 'duration_ns', 0.2, 1);
  const node = culprit();
  // Zoom on the widest frame but the root.
  const target = (await frames(page)).filter((f) => f.node !== 0).sort((x, y) => y.w - x.w)[0];
  await page.locator('#flame').click({ position: { x: target.x + target.w / 2, y: target.y + 8 } });
  await page.waitForFunction((k) => window.tracelens.flame.zoom === k, target.node);
  const zoomed = await frames(page);
  const z = zoomed.find((x) => x.node === target.node);
  assert.ok(Math.abs(z.x) < 1e-6 && Math.abs(z.w - (await page.evaluate(() => document.getElementById('flame').clientWidth))) < 1, 'the zoomed frame is full width');
  await page.fill('#search', node.path[0]);
  await page.check('input[name=brush][value=a]');
  const link = page.url();
  assert.match(link, /zoom=\d+/);
  const again = await open(link);
  assert.deepEqual(await counts(again), await counts(page));
  assert.equal(await again.inputValue('#search'), node.path[0]);
  assert.ok(await again.isChecked('input[name=brush][value=a]'));
  const strip = (l) => l.map((f) => [f.node, Math.round(f.x), Math.round(f.w), f.fill, f.match]);
  assert.deepEqual(strip(await frames(again)), strip(await frames(page)));
  await again.close();
  await page.close();
});

test('a log axis rebins a histogram, the groups stay', async () => {
  const page = await open(url);
  const before = await counts(page);
  const views = await page.evaluate(() => window.tracelens.views);
  await page.click('.hist[data-metric="duration_ns"] button.log');
  await page.waitForFunction((v) => window.tracelens.views > v, views);
  const axis = await page.evaluate(() => window.tracelens.view.axes[window.tracelens.meta.metrics.findIndex((m) => m.name === 'duration_ns')]);
  assert.equal(axis.scale, 'log');
  assert.match(page.url(), /log=duration_ns/);
  assert.deepEqual(await counts(page), before);
  await page.close();
});

// Opens the file written by `compare --html` with ARGS; records what it fetches.
async function openFile(name, args) {
  const file = join(scratch, name);
  execFileSync(BIN, ['compare', DB, ...args, '--html', file]);
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.fetched = [];
  page.on('request', (r) => page.fetched.push(r.url()));
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-views="1"]', { timeout: 60000 });
  return page;
}

test('compare --html: the same page in one file, without a server', async () => {
  const page = await openFile('page.html', ['--b', 'duration>=p90']);
  await page.waitForFunction(() => window.tracelens.flame.frames.length > 0);
  assert.deepEqual(page.errors, []);
  assert.deepEqual(page.fetched.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), [], 'nothing is fetched');
  const c = compare('duration<=p50', 'duration>=p90');
  assert.deepEqual(await counts(page), [c.a.count, c.b.count]);
  const node = culprit();
  const f = (await frames(page)).find((x) => x.node === node.node);
  assert.ok(f && isRed(rgb(f.fill)), 'the culprit is red');
  await page.fill('#search', node.path[node.path.length - 1]);
  await page.waitForFunction(() => window.tracelens.flame.frames.some((f) => f.match));
  await page.close();
});

test('compare --html: the file brushes, from its own columns', async () => {
  // The view the page computes from the file's columns is the one the server computed.
  const page = await openFile('groups.html', ['--b', 'duration>=p90']);
  const [mine, theirs] = await page.evaluate(() => {
    const t = window.tracelens;
    return [t.local.view(t.local.parse({})), t.data.view];
  });
  for (const g of ['a', 'b']) {
    assert.equal(mine[g].count, theirs[g].count, g);
    assert.deepEqual(mine[g].hist, theirs[g].hist, g);
    assert.deepEqual(mine[g].present, theirs[g].present, g);
    assert.deepEqual(mine[g].samples, theirs[g].samples, g);
    for (const k of ['mean', 'sd']) mine[g][k].forEach((x, i) => assert.ok(Math.abs(x - theirs[g][k][i]) <= 1e-9 * Math.max(1, Math.abs(x)), `${g}.${k}[${i}]: ${x} vs ${theirs[g][k][i]}`));
  }
  assert.deepEqual(mine.axes, theirs.axes);
  await page.close();

  // A and B both every execution: no frame differs; brushing B on the slower part of the
  // duration axis makes it those executions (the oracle: compare's expression), and the
  // flame graph turns red where they spend more.
  const file = await openFile('brush.html', ['--a', 'all', '--b', 'all']);
  const n = await file.evaluate(() => window.tracelens.meta.executions);
  assert.deepEqual(await counts(file), [n, n]);
  const same = await frames(file);
  assert.ok(same.length > 1);
  for (const f of same) assert.ok(f.z === 0 && (f.node === 0 || f.fill === NEUTRAL), `${f.name}: z ${f.z} ${f.fill}`);
  const live = await brush(file, 'b', 'duration_ns', 0.3, 1);
  const [a, b] = await counts(file);
  assert.equal(live, b, 'the count while brushing (cube) is the exact count after');
  assert.ok(a === n && b < n && b > 0, `A ${a}, B ${b} of ${n}`);
  const [lo, hi] = await file.evaluate(() => window.tracelens.state.b.duration_ns);
  const oracle = compare('all', `duration>=${lo} && duration<=${hi}`);
  assert.equal(b, oracle.b.count, `B = duration in [${lo}, ${hi}]`);
  const after = await frames(file);
  const red = after.find((f) => isRed(rgb(f.fill)) && f.w > 4);
  assert.ok(red, 'the slow part spends more somewhere');
  assert.ok(isRed(await pixel(file, red.x + red.w / 2, red.y + 1.5)), 'drawn red on the canvas');
  const oracleNode = oracle.nodes.find((x) => x.node === red.node);
  assert.ok(oracleNode && oracleNode.mean_b_ns > oracleNode.mean_a_ns, `compare agrees: B spends more in ${red.name}`);
  assert.match(await file.textContent('#group-b'), /all and duration_ns in \[/);
  assert.deepEqual(file.fetched.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), [], 'nothing is fetched');
  assert.deepEqual(file.errors, []);
  await file.close();
});
