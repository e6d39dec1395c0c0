// The page's state in the URL's fragment, so that a link reopens the same view:
// #a=METRIC:LO:HI,METRIC:LO:HI&b=...&log=METRIC,METRIC&zoom=NODE&q=SEARCH&brush=a|b

function parseGroup(s) {
  const g = {};
  for (const part of (s || '').split(',')) {
    const m = /^(.+):(-?\d+):(-?\d+)$/.exec(part);
    if (m) g[m[1]] = [Number(m[2]), Number(m[3])];
  }
  return g;
}

function groupText(g) {
  return Object.entries(g).map(([k, [lo, hi]]) => `${k}:${lo}:${hi}`).join(',');
}

export function readState(hash, defaults) {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const has = p.has('a') || p.has('b');
  return {
    a: has ? parseGroup(p.get('a')) : { ...defaults.a },
    b: has ? parseGroup(p.get('b')) : { ...defaults.b },
    log: (p.get('log') || '').split(',').filter((x) => x),
    zoom: p.has('zoom') ? Number(p.get('zoom')) || 0 : 0,
    q: p.get('q') || '',
    brush: p.get('brush') === 'a' ? 'a' : 'b',
  };
}

export function writeState(s) {
  const p = new URLSearchParams();
  p.set('a', groupText(s.a));
  p.set('b', groupText(s.b));
  if (s.log.length) p.set('log', s.log.join(','));
  if (s.zoom) p.set('zoom', String(s.zoom));
  if (s.q) p.set('q', s.q);
  p.set('brush', s.brush);
  return '#' + p.toString();
}
