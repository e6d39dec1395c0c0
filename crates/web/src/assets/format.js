// Numbers in words and the flame graph's colours (the same as `tracelens compare --svg`).

export function humanNs(ns) {
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
  return ns.toFixed(0) + ' ns';
}

export function humanValue(v, unit) {
  if (unit === 'ns' || unit === 'timestamp') return humanNs(v);
  if (unit === 'bytes') {
    const a = Math.abs(v);
    if (a >= 1 << 30) return (v / (1 << 30)).toFixed(1) + ' GiB';
    if (a >= 1 << 20) return (v / (1 << 20)).toFixed(1) + ' MiB';
    if (a >= 1 << 10) return (v / (1 << 10)).toFixed(1) + ' KiB';
    return v + ' B';
  }
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

export function humanZ(z) {
  if (z === Infinity) return '+inf';
  if (z === -Infinity) return '-inf';
  return (z >= 0 ? '+' : '') + z.toFixed(2);
}

export function thousands(n) {
  return Math.round(n).toLocaleString('en-US');
}

// z = (mean B - mean A) / sd A: 0 when the means are equal, ±inf when sd A is 0.
export function zScore(meanA, meanB, sdA) {
  const d = meanB - meanA;
  if (d === 0) return 0;
  if (sdA === 0) return d > 0 ? Infinity : -Infinity;
  return d / sdA;
}

// Neutral under |z| = 1, then red (B spends more) or blue (less), saturated at |z| = 3.
export function zColor(z) {
  if (Number.isNaN(z) || Math.abs(z) < 1) return 'rgb(221,221,210)';
  const t = Math.min(1, Math.max(0, (Math.abs(z) - 1) / 2));
  const fade = (full, light) => Math.round(light + (full - light) * t);
  return z > 0
    ? `rgb(${fade(220, 250)},${fade(30, 190)},${fade(30, 170)})`
    : `rgb(${fade(40, 180)},${fade(90, 205)},${fade(220, 250)})`;
}
