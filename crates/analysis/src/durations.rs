//! Duration statistics: count, extremes, mean and sample standard deviation of a set of
//! durations, from exact integer sums, so that they do not depend on the order in which
//! values are added or states merged (any cut of the trace gives the same numbers).

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Count, extremes and exact sums of a set of durations (ns): the mean and the standard
/// deviation come from integer sums, so they do not depend on the order of the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Durations {
    /// How many.
    pub count: u64,
    /// Shortest (0 when `count` is 0).
    pub min_ns: i64,
    /// Longest (0 when `count` is 0).
    pub max_ns: i64,
    /// Sum.
    pub sum_ns: i128,
    /// Sum of squares.
    pub sum_sq: u128,
}

impl Durations {
    /// Adds one duration.
    #[inline]
    pub fn add(&mut self, d: i64) {
        if self.count == 0 {
            self.min_ns = d;
            self.max_ns = d;
        } else {
            self.min_ns = self.min_ns.min(d);
            self.max_ns = self.max_ns.max(d);
        }
        self.count += 1;
        self.sum_ns += i128::from(d);
        let a = u128::from(d.unsigned_abs());
        self.sum_sq = self.sum_sq.saturating_add(a * a);
    }

    /// Adds another set.
    pub fn merge(&mut self, o: &Durations) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.sum_sq = self.sum_sq.saturating_add(o.sum_sq);
    }

    /// The mean, in ns (0 without values).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The sample standard deviation (n - 1 in the denominator, as Python's
    /// `statistics.stdev`), in ns; `None` with fewer than two values.
    pub fn stdev_ns(&self) -> Option<f64> {
        if self.count < 2 {
            return None;
        }
        let n = i128::from(self.count as i64);
        // n * sum(x^2) - (sum x)^2, exactly when it fits.
        let exact = (self.sum_sq)
            .checked_mul(n as u128)
            .and_then(|a| self.sum_ns.checked_mul(self.sum_ns).map(|b| (a, b.unsigned_abs())))
            .and_then(|(a, b)| a.checked_sub(b));
        let var = match exact {
            Some(num) => num as f64 / ((n * (n - 1)) as f64),
            None => {
                let mean = self.sum_ns as f64 / n as f64;
                ((self.sum_sq as f64 - mean * self.sum_ns as f64) / (n - 1) as f64).max(0.0)
            }
        };
        Some(var.sqrt())
    }
}

/// `{"count", "min_ns", "max_ns", "avg_ns", "stdev_ns", "total_ns"}`: `min_ns`, `max_ns` and
/// `avg_ns` are null without values, `stdev_ns` below two; the mean and the standard deviation
/// are rounded to 0.001 ns.
impl Serialize for Durations {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let some = self.count > 0;
        let thousandths = |v: f64| (v * 1000.0).round() / 1000.0;
        let mut st = s.serialize_struct("Durations", 6)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("min_ns", &some.then_some(self.min_ns))?;
        st.serialize_field("max_ns", &some.then_some(self.max_ns))?;
        st.serialize_field("avg_ns", &some.then(|| thousandths(self.mean_ns())))?;
        st.serialize_field("stdev_ns", &self.stdev_ns().map(thousandths))?;
        st.serialize_field("total_ns", &self.sum_ns)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_and_their_json() {
        let mut d = Durations::default();
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"count":0,"min_ns":null,"max_ns":null,"avg_ns":null,"stdev_ns":null,"total_ns":0}"#);
        for v in [1, 2, 4] {
            d.add(v);
        }
        assert_eq!((d.count, d.min_ns, d.max_ns, d.sum_ns), (3, 1, 4, 7));
        // Mean 7/3, sample variance (1 + 4 + 16 - 49/3) / 2 = 7/3.
        assert!((d.mean_ns() - 7.0 / 3.0).abs() < 1e-12);
        assert!((d.stdev_ns().unwrap() - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"count":3,"min_ns":1,"max_ns":4,"avg_ns":2.333,"stdev_ns":1.528,"total_ns":7}"#);
        // Merging is adding.
        let (mut a, mut b) = (Durations::default(), Durations::default());
        a.add(1);
        b.add(2);
        b.add(4);
        a.merge(&b);
        assert_eq!(a, d);
    }
}
