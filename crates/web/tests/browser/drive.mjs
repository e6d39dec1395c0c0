// Driving the page in chromium, shared by the browser tests and bench/web-brush.mjs.

import { chromium } from 'playwright-core';

// Debian's chromium (or CHROMIUM), headless.
export function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
}

// Brushes `group` on `metric`'s histogram: presses at fraction xs[0] of its width, once the
// cube is there moves through the other points (`moves`, given them as [x, y] in the page's
// pixels, does it: by default one mouse move after the other), and releases. Returns the
// group's count just before the release (from the cube), after waiting for the exact view.
export async function brush(page, group, metric, xs, moves = oneByOne) {
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
  await moves(page, xs.slice(1).map((f) => [x(f), y]));
  const live = await page.evaluate((g) => Number(document.getElementById('group-' + g).dataset.count), group);
  await page.mouse.up();
  await page.waitForFunction((v) => window.tracelens.views > v, views, { timeout: 120000 });
  return live;
}

async function oneByOne(page, points) {
  for (const [x, y] of points) await page.mouse.move(x, y);
}
