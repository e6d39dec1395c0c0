//! What the text reports of the analysis commands share: names from the trace with their
//! control characters escaped (never raw to a terminal), times, and durations in
//! microseconds as lttng-analyses prints them.

use std::borrow::Cow;

use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::Durations;

/// A name from the trace (thread, file, handler, event, stream), its control characters
/// escaped as `print` escapes them.
pub fn esc(name: &str) -> Cow<'_, str> {
    tracelens_trace::text::escape_controls(name)
}

/// Nanoseconds as microseconds with 3 decimals.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// `ns` as signed seconds with 9 decimals.
pub fn seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// `Timerange: [BEGIN, END] UTC` of a report's first and last events, when it has them.
pub fn timerange(begin_ns: Option<i64>, end_ns: Option<i64>) -> Option<String> {
    Some(format!("Timerange: [{}, {}] UTC", format_utc(begin_ns?), format_utc(end_ns?)))
}

/// `HH:MM:SS.NNNNNNNNN` (UTC) of a time in ns from the Unix epoch.
pub fn time_of_day(ns: i64) -> String {
    let s = format_utc(ns);
    s.split_once(' ').map_or(s.clone(), |(_, t)| t.to_string())
}

/// Count, minimum, mean, maximum and sample standard deviation (`?` below two values) in
/// microseconds, as the columns of a statistics row.
pub fn stats_us(d: &Durations) -> (u64, String, String, String, String) {
    (d.count, us(d.min_ns as f64), us(d.mean_ns()), us(d.max_ns as f64), d.stdev_ns().map_or_else(|| "?".to_string(), us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names() {
        assert_eq!(seconds(-1_500_000_000), "-1.500000000");
        assert_eq!(us(1234.5), "1.234");
        assert_eq!(time_of_day(1_704_067_200_123_456_789), "00:00:00.123456789");
        assert_eq!(esc("bash\u{1b}]0;x\u{7}"), "bash\\e]0;x\\a");
        let mut d = Durations::default();
        assert_eq!(stats_us(&d), (0, "0.000".into(), "0.000".into(), "0.000".into(), "?".into()));
        d.add(1000);
        d.add(3000);
        assert_eq!(stats_us(&d), (2, "1.000".into(), "2.000".into(), "3.000".into(), "1.414".into()));
    }
}
