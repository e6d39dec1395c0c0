// Brushing in headless chromium (Debian's, driven by playwright-core from
// crates/web/tests/browser/node_modules): opens the page of `tracelens serve` at URL, takes
// the first view's time from navigation start, then for each metric brushed drags across
// its histogram MOVES times. Prints one JSON object of times in ms:
//
// * presented: per pointer move, from the input event's timestamp to the presentation of the
//   frame painted after its handlers ran (the browser's Event Timing API, `event` entries,
//   which chromium rounds to 8 ms; entries come only for events of 16 ms or more: the p95 is
//   '<16' when fewer than 5% of the moves have one);
// * toFrame: the page's own timing, per redraw, from the earliest input event it shows to
//   the end of the animation frame that holds it (style, layout, paint and commit done);
// * drawn: from that input event to the end of the redraw (histograms, flame graph, counts);
// * draw: the redraw alone; redraws per animation frame (1 at most);
// * the cube requests (brush start) and view requests (brush end).
//
// Moves are sent one after the other, each once the browser has taken the previous one
// (closed loop: the next move comes at a phase of the frame set by the previous), or with
// EVERY=MS every MS milliseconds whatever the page does (open loop, as a mouse reports: at
// 8 ms, 125 Hz, about two moves a frame).
//
//   node bench/web-brush.mjs URL [MOVES] [METRIC,METRIC...]
//   TRACELENS_ASSETS=DIR node bench/web-brush.mjs ...   (the page's files from DIR instead of
//                                                      the server: a page changed without a rebuild)
import { readFileSync } from 'node:fs';
import { brush as closedBrush, launch } from '../crates/web/tests/browser/drive.mjs';

const [url, moves = '200', metrics = 'duration_ns,timer_ns,running_ns,syscalls'] = process.argv.slice(2);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
const every = Number(process.env.EVERY || 0);
const cdp = every ? await page.context().newCDPSession(page) : null;
// drive.brush, with the moves sent every `every` ms without waiting for the browser.
async function openBrush(page, group, metric, xs) {
  await page.check(`input[name=brush][value=${group}]`);
  const canvas = page.locator(`.hist[data-metric="${metric}"] canvas`);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const x = (f) => box.x + 6 + f * (box.width - 12);
  const y = box.y + 30;
  const views = await page.evaluate(() => window.tracelens.views);
  await page.mouse.move(x(xs[0]), y);
  await page.mouse.down();
  await page.waitForFunction(() => window.tracelens.live && window.tracelens.live.cube, null, { timeout: 120000 });
  const sent = [];
  let next = performance.now();
  for (const f of xs.slice(1)) {
    sent.push(cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: x(f), y, button: 'left', buttons: 1 }));
    next += every;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  await Promise.all(sent);
  await page.mouse.up();
  await page.waitForFunction((v) => window.tracelens.views > v, views, { timeout: 120000 });
}
const brush = every ? openBrush : closedBrush;
const assets = process.env.TRACELENS_ASSETS;
if (assets) {
  await page.route(/\/[a-z]+\.(js|css)$/, (route) => {
    const name = new URL(route.request().url()).pathname.slice(1);
    route.fulfill({ contentType: name.endsWith('.js') ? 'text/javascript' : 'text/css', body: readFileSync(`${assets}/${name}`) });
  });
}
await page.addInitScript(() => {
  window.benchEvents = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) if (e.name === 'pointermove' && window.benchOn) window.benchEvents.push(e.duration);
  }).observe({ type: 'event', durationThreshold: 16, buffered: true });
});
await page.goto(url);
await page.waitForSelector('body[data-views="1"]', { timeout: 120000 });
const first = await page.evaluate(() => ({ firstView: window.tracelens.firstView, executions: window.tracelens.meta.executions, metrics: window.tracelens.meta.metrics.length, varying: window.tracelens.meta.metrics.filter((m) => m.min !== m.max).length, nodes: window.tracelens.meta.parent.length }));
let moved = 0;
const counted = () => page.evaluate(() => performance.eventCounts.get('pointermove'));
for (const [k, metric] of metrics.split(',').entries()) {
  for (const group of ['b', 'a']) {
    // Press, then sweep right and back MOVES times.
    const n = Number(moves);
    const xs = [0.1 + 0.05 * k].concat(Array.from({ length: n }, (_, i) => {
      const t = (i + 1) / n;
      return 0.2 + 0.75 * (t < 0.5 ? 2 * t : 2 - 2 * t);
    }));
    const c0 = await counted();
    await page.evaluate(() => { window.benchOn = true; });
    await brush(page, group, metric, xs);
    await page.evaluate(() => { window.benchOn = false; });
    moved += (await counted()) - c0;
  }
}
const t = await page.evaluate(() => ({ presented: window.benchEvents, toFrame: window.tracelens.frameTimings, drawn: window.tracelens.timings, draw: window.tracelens.work, perFrame: window.tracelens.redrawsPerFrame || [], starts: window.tracelens.frameStarts || [], intervals: window.tracelens.frameIntervals || [], cubeTimes: window.tracelens.cubeTimes, viewTimes: window.tracelens.viewTimes }));
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Number(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(2)) : null;
};
const sum = (xs) => ({ n: xs.length, p50: q(xs, 50), p95: q(xs, 95), max: q(xs, 100) });
// Moves without an entry were presented within 16 ms (rounded): the p95 over all moves is
// under 16 when fewer than 5% have one, else the entry of that rank.
const slow = [...t.presented].sort((a, b) => b - a);
const rank = Math.ceil(0.05 * moved);
const presented = { moves: moved, over16: slow.length, p95: slow.length >= rank ? slow[rank - 1] : '<16', max: slow.length ? slow[0] : '<16' };
console.log(JSON.stringify({ ...first, firstView: Number(first.firstView.toFixed(1)), presented, toFrame: sum(t.toFrame), toFrameStart: sum(t.starts), frameInterval: q(t.intervals, 50), missed: t.starts.filter((x) => x > 1.5 * q(t.intervals, 50)).length, drawn: sum(t.drawn), draw: sum(t.draw), redrawsPerFrame: t.perFrame.length ? Math.max(...t.perFrame) : null, cube: sum(t.cubeTimes), view: sum(t.viewTimes), errors }));
await browser.close();
