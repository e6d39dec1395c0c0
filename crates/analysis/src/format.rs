//! Numbers as the text and JSON reports write them.

/// A float as JSON (finite; 3 decimals are plenty for nanoseconds).
pub(crate) fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "null".into()
    }
}

/// A string as a JSON string.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Microseconds with 3 decimals, as lttng-analyses prints durations.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// `ns` as seconds with 9 decimals.
pub(crate) fn seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}
