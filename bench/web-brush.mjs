// Brushing in headless chromium (Debian's, driven by playwright-core from
// crates/web/tests/browser/node_modules): opens the page of `tracelens serve` at URL, takes
// the first view's time from navigation start, then for each metric brushed drags across
// its histogram MOVES times. Prints one JSON object of times in ms:
//
// * toFrameStart: per frame that shows a brush move, from the earliest input event it shows
//   (its timestamp) to the frame's time (requestAnimationFrame's timestamp, the frame's
//   vsync; below 0 when chromium runs a frame late, after an input that came past its
//   vsync); missed: frames more than 1.5 frame periods (frameInterval) after that input;
//   chromium gives no Event Timing entries for pointer moves, so presentation is not timed;
// * toFrame: from that input event to the end of that frame (a task posted from its
//   requestAnimationFrame callback: style, layout, paint and commit done);
// * drawn: from that input event to the end of the redraw (histograms, flame graph, counts);
// * draw: the redraw alone; redraws per animation frame (2 at most);
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
import { brush as drive, launch } from '../crates/web/tests/browser/drive.mjs';

const [url, moves = '200', metrics = 'duration_ns,timer_ns,running_ns,syscalls'] = process.argv.slice(2);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
const every = Number(process.env.EVERY || 0);
const cdp = every ? await page.context().newCDPSession(page) : null;
// The moves sent every `every` ms without waiting for the browser.
async function openLoop(page, points) {
  const sent = [];
  let next = performance.now();
  for (const [x, y] of points) {
    sent.push(cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y, button: 'left', buttons: 1 }));
    next += every;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  await Promise.all(sent);
}
const brush = (page, group, metric, xs) => drive(page, group, metric, xs, every ? openLoop : undefined);
const assets = process.env.TRACELENS_ASSETS;
if (assets) {
  await page.route(/\/[a-z]+\.(js|css)$/, (route) => {
    const name = new URL(route.request().url()).pathname.slice(1);
    route.fulfill({ contentType: name.endsWith('.js') ? 'text/javascript' : 'text/css', body: readFileSync(`${assets}/${name}`) });
  });
}
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
const t = await page.evaluate(() => ({ toFrame: window.tracelens.frameTimings, drawn: window.tracelens.timings, draw: window.tracelens.work, perFrame: window.tracelens.redrawsPerFrame || [], starts: window.tracelens.frameStarts || [], intervals: window.tracelens.frameIntervals || [], cubeTimes: window.tracelens.cubeTimes, viewTimes: window.tracelens.viewTimes }));
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Number(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(2)) : null;
};
const sum = (xs) => ({ n: xs.length, p50: q(xs, 50), p95: q(xs, 95), max: q(xs, 100) });
console.log(JSON.stringify({ ...first, firstView: Number(first.firstView.toFixed(1)), toFrame: sum(t.toFrame), toFrameStart: sum(t.starts), frameInterval: q(t.intervals, 50), missed: t.starts.filter((x) => x > 1.5 * q(t.intervals, 50)).length, drawn: sum(t.drawn), draw: sum(t.draw), redrawsPerFrame: t.perFrame.length ? Math.max(...t.perFrame) : null, cube: sum(t.cubeTimes), view: sum(t.viewTimes), errors }));
await browser.close();
