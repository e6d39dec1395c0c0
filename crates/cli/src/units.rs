//! Parsing and printing of sizes and counts shared by the commands.

/// Parses a byte count: `4096`, `64K`, `64M`, `1G` (also `64k`, `64KiB`, `64MB`...: powers of
/// 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a size in bytes (e.g. 4096, 64K, 64M, 1G)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("`{s}`: unknown unit (use K, M or G)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("`{s}` is too large"))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in binary units: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A duration in ns with a unit that keeps three or four significant digits: `812 ns`,
/// `12.35 µs`, `1.234 ms`, `2.500 s`.
pub fn duration(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{sign}{:.2} µs", a / 1e3)
    } else if a < 1e9 {
        format!("{sign}{:.3} ms", a / 1e6)
    } else {
        format!("{sign}{:.3} s", a / 1e9)
    }
}
