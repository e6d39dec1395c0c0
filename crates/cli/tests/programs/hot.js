// A hot function two calls deep, for `record --stacks` of `node --perf-basic-prof`.
function leaf(n) { let s = 0; for (let i = 0; i < n; i++) { s += i * i % 7; } return s; }
function middle(n) { return leaf(n) + 1; }
function outer(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) { x += middle(20000); } return x; }
console.log(outer(Number(process.argv[2] || 1000)));
