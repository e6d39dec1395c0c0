// Brushing in headless chromium (Debian's, driven by playwright-core from
// crates/web/tests/browser/node_modules): opens the page of `tracelens serve` at URL, takes
// the first view's time from navigation start, then for each metric brushed drags across
// its histogram MOVES times, reading the page's own timings: input event to redrawn
// histograms and flame graph, and to the frame after; the cube requests (brush start) and
// view requests (brush end). Prints one JSON object.
//
//   node bench/web-brush.mjs URL [MOVES] [METRIC,METRIC...]
import { brush, launch } from '../crates/web/tests/browser/drive.mjs';

const [url, moves = '200', metrics = 'duration_ns,timer_ns,running_ns,syscalls'] = process.argv.slice(2);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
await page.goto(url);
await page.waitForSelector('body[data-views="1"]', { timeout: 120000 });
const first = await page.evaluate(() => ({ firstView: window.tracelens.firstView, executions: window.tracelens.meta.executions, metrics: window.tracelens.meta.metrics.length, varying: window.tracelens.meta.metrics.filter((m) => m.min !== m.max).length, nodes: window.tracelens.meta.parent.length }));
for (const [k, metric] of metrics.split(',').entries()) {
  for (const group of ['b', 'a']) {
    // Press, then sweep right and back MOVES times.
    const n = Number(moves);
    const xs = [0.1 + 0.05 * k].concat(Array.from({ length: n }, (_, i) => {
      const t = (i + 1) / n;
      return 0.2 + 0.75 * (t < 0.5 ? 2 * t : 2 - 2 * t);
    }));
    await brush(page, group, metric, xs);
  }
}
const t = await page.evaluate(() => ({ timings: window.tracelens.timings, work: window.tracelens.work, frameTimings: window.tracelens.frameTimings, cubeTimes: window.tracelens.cubeTimes, viewTimes: window.tracelens.viewTimes }));
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Number(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(2)) : null;
};
const sum = (xs) => ({ n: xs.length, p50: q(xs, 50), p95: q(xs, 95), max: q(xs, 100) });
console.log(JSON.stringify({ ...first, firstView: Number(first.firstView.toFixed(1)), brushRedraw: sum(t.timings), handler: sum(t.work), brushToNextFrame: sum(t.frameTimings), cube: sum(t.cubeTimes), view: sum(t.viewTimes), errors }));
await browser.close();
