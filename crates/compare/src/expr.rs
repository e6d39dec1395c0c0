//! The filter language of `tracelens compare --a/--b`: which executions are in a group.
//!
//! ```text
//! expr    := or
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | "(" expr ")" | "all" | compare
//! compare := METRIC OP value          OP: == = != < <= > >=
//! value   := NUMBER [UNIT] | pNN | "text" | 'text'
//! ```
//!
//! `METRIC` is a column of the database (`duration_ns`, `tid`, `begin.arg1`...); a time
//! metric may be named without its `_ns` (`duration`, `timer`). Numbers of time metrics take
//! `ns` (the default), `us` (or `µs`), `ms`, `s`; byte counts take `B`, `KB`/`MB`/`GB`
//! (powers of 1000) and `KiB`/`MiB`/`GiB`. `pNN` (`p90`, `p99.9`) is that percentile of the
//! metric over all executions (nearest rank). An execution that has no value for a metric
//! (a dimension its events lack) matches no comparison on it. A mistake is an
//! [`Error::Expression`] naming the column where it is.

use crate::metrics::Unit;
use crate::table::{Executions, Values};
use crate::{Error, Result};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `==` (or `=`).
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Op {
    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// The right side of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A number, in the metric's unit (ns for times).
    Int(i64),
    /// A percentile (0 to 100) of the metric over all executions.
    Percentile(f64),
    /// Text.
    Text(String),
}

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Every execution.
    All,
    /// Not.
    Not(Box<Node>),
    /// Both.
    And(Box<Node>, Box<Node>),
    /// Either.
    Or(Box<Node>, Box<Node>),
    /// `column op operand`.
    Cmp {
        /// The metric's column.
        column: usize,
        /// The operator.
        op: Op,
        /// The value compared with.
        operand: Operand,
    },
}

/// An expression over the metrics of a database.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Its text.
    pub text: String,
    /// Its tree.
    pub root: Node,
}

/// A set of executions, as a bit per execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    bits: Vec<u64>,
    len: usize,
}

impl Selection {
    /// None of `len` executions.
    pub fn none(len: usize) -> Selection {
        Selection { bits: vec![0; len.div_ceil(64)], len }
    }

    /// All of `len` executions.
    pub fn all(len: usize) -> Selection {
        let mut s = Selection { bits: vec![u64::MAX; len.div_ceil(64)], len };
        s.trim();
        s
    }

    /// The executions whose index `keep` accepts.
    pub fn from_fn(len: usize, mut keep: impl FnMut(usize) -> bool) -> Selection {
        let mut s = Selection::none(len);
        for i in 0..len {
            if keep(i) {
                s.insert(i);
            }
        }
        s
    }

    /// The executions of `ids` (indexes; those out of range are left out).
    pub fn from_ids(len: usize, ids: &[u32]) -> Selection {
        let mut s = Selection::none(len);
        for &i in ids.iter().filter(|&&i| (i as usize) < len) {
            s.insert(i as usize);
        }
        s
    }

    fn trim(&mut self) {
        let r = self.len % 64;
        if r != 0 {
            if let Some(last) = self.bits.last_mut() {
                *last &= (1u64 << r) - 1;
            }
        }
    }

    /// Adds execution `i`.
    pub fn insert(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Whether execution `i` is in.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// How many executions are in.
    pub fn count(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The executions in, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(k, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(k * 64 + b)
            })
        })
    }

    fn and(mut self, o: &Selection) -> Selection {
        for (a, b) in self.bits.iter_mut().zip(&o.bits) {
            *a &= b;
        }
        self
    }

    fn or(mut self, o: &Selection) -> Selection {
        for (a, b) in self.bits.iter_mut().zip(&o.bits) {
            *a |= b;
        }
        self
    }

    fn not(mut self) -> Selection {
        for a in self.bits.iter_mut() {
            *a = !*a;
        }
        self.trim();
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num { value: f64, text: String },
    Str(String),
    Op(Op),
    And,
    Or,
    Not,
    Open,
    Close,
}

struct Lexer<'a> {
    chars: Vec<char>,
    at: usize,
    text: &'a str,
}

impl Lexer<'_> {
    fn err(&self, col: usize, message: impl Into<String>) -> Error {
        Error::Expression { expr: self.text.to_string(), column: col + 1, message: message.into() }
    }

    /// Tokens with the index of their first character.
    fn tokens(mut self) -> Result<Vec<(usize, Tok)>> {
        let mut out = Vec::new();
        while self.at < self.chars.len() {
            let c = self.chars[self.at];
            let start = self.at;
            let peek = self.chars.get(self.at + 1).copied();
            let tok = match c {
                ' ' | '\t' | '\n' => {
                    self.at += 1;
                    continue;
                }
                '(' => Tok::Open,
                ')' => Tok::Close,
                '&' if peek == Some('&') => Tok::And,
                '|' if peek == Some('|') => Tok::Or,
                '=' => Tok::Op(Op::Eq),
                '!' if peek == Some('=') => Tok::Op(Op::Ne),
                '!' => Tok::Not,
                '<' if peek == Some('=') => Tok::Op(Op::Le),
                '<' => Tok::Op(Op::Lt),
                '>' if peek == Some('=') => Tok::Op(Op::Ge),
                '>' => Tok::Op(Op::Gt),
                '"' | '\'' => {
                    let mut s = String::new();
                    let mut i = self.at + 1;
                    loop {
                        match self.chars.get(i) {
                            None => return Err(self.err(start, "text not closed (a quote is missing)")),
                            Some(&q) if q == c => break,
                            Some('\\') if i + 1 < self.chars.len() => {
                                s.push(self.chars[i + 1]);
                                i += 2;
                            }
                            Some(&x) => {
                                s.push(x);
                                i += 1;
                            }
                        }
                    }
                    self.at = i + 1;
                    out.push((start, Tok::Str(s)));
                    continue;
                }
                c if c.is_ascii_digit() || (c == '.' && peek.is_some_and(|p| p.is_ascii_digit())) || (c == '-' && peek.is_some_and(|p| p.is_ascii_digit() || p == '.')) => {
                    let mut i = self.at + 1;
                    while i < self.chars.len() && (self.chars[i].is_ascii_digit() || self.chars[i] == '.') {
                        i += 1;
                    }
                    let num: String = self.chars[self.at..i].iter().collect();
                    let value: f64 = num.parse().map_err(|_| self.err(start, format!("`{num}` is not a number")))?;
                    // A unit right after.
                    let mut j = i;
                    while j < self.chars.len() && (self.chars[j].is_alphabetic()) {
                        j += 1;
                    }
                    let text: String = self.chars[self.at..j].iter().collect();
                    self.at = j;
                    out.push((start, Tok::Num { value, text }));
                    continue;
                }
                c if c.is_alphabetic() || c == '_' => {
                    let mut i = self.at + 1;
                    while i < self.chars.len() && (self.chars[i].is_alphanumeric() || matches!(self.chars[i], '_' | '.')) {
                        i += 1;
                    }
                    let word: String = self.chars[self.at..i].iter().collect();
                    self.at = i;
                    out.push((start, Tok::Ident(word)));
                    continue;
                }
                c => return Err(self.err(start, format!("unexpected `{c}` (operators: == != < <= > >= && || ! and parentheses)"))),
            };
            self.at += if matches!(tok, Tok::And | Tok::Or) || matches!(tok, Tok::Op(Op::Le | Op::Ge | Op::Ne)) || (tok == Tok::Op(Op::Eq) && peek == Some('=')) { 2 } else { 1 };
            out.push((start, tok));
        }
        Ok(out)
    }
}

struct Parser<'a> {
    toks: Vec<(usize, Tok)>,
    at: usize,
    text: &'a str,
    db: &'a Executions,
    end: usize,
}

impl Parser<'_> {
    fn err(&self, col: usize, message: impl Into<String>) -> Error {
        Error::Expression { expr: self.text.to_string(), column: col + 1, message: message.into() }
    }

    fn here(&self) -> usize {
        self.toks.get(self.at).map_or(self.end, |t| t.0)
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.1)
    }

    fn or(&mut self) -> Result<Node> {
        let mut left = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            left = Node::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            left = Node::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node> {
        let col = self.here();
        match self.toks.get(self.at).map(|t| t.1.clone()) {
            Some(Tok::Not) => {
                self.at += 1;
                Ok(Node::Not(Box::new(self.unary()?)))
            }
            Some(Tok::Open) => {
                self.at += 1;
                let inner = self.or()?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(self.err(self.here(), "expected `)`"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(Tok::Ident(w)) if w == "all" => {
                self.at += 1;
                Ok(Node::All)
            }
            Some(Tok::Ident(w)) => {
                self.at += 1;
                self.compare(col, &w)
            }
            Some(_) => Err(self.err(col, "expected a metric name, `!`, `(` or `all`")),
            None => Err(self.err(col, "expected a comparison such as `duration>2ms`")),
        }
    }

    fn column(&self, col: usize, name: &str) -> Result<usize> {
        if let Some(c) = self.db.column(name).or_else(|| self.db.column(&format!("{name}_ns"))) {
            return Ok(c);
        }
        let names: Vec<&str> = self.db.metrics.iter().map(|m| m.name.as_str()).collect();
        let close: Vec<&str> = names.iter().copied().filter(|n| edit_distance(n, name) <= 2 || edit_distance(n.trim_end_matches("_ns"), name) <= 2).collect();
        let hint = if close.is_empty() { format!("metrics: {}", names.join(", ")) } else { format!("did you mean {}?", close.join(" or ")) };
        Err(self.err(col, format!("no metric `{name}` ({hint})")))
    }

    fn compare(&mut self, col: usize, name: &str) -> Result<Node> {
        let column = self.column(col, name)?;
        let metric = &self.db.metrics[column];
        let op = match self.peek() {
            Some(Tok::Op(op)) => *op,
            _ => return Err(self.err(self.here(), format!("expected an operator (== != < <= > >=) after `{name}`"))),
        };
        self.at += 1;
        let vcol = self.here();
        let operand = match self.toks.get(self.at).map(|t| t.1.clone()) {
            Some(Tok::Str(s)) => {
                if !metric.is_text() {
                    return Err(self.err(vcol, format!("`{}` is a number: compare it with a number, not text", metric.name)));
                }
                if !matches!(op, Op::Eq | Op::Ne) {
                    return Err(self.err(vcol, "text compares with == or != only"));
                }
                Operand::Text(s)
            }
            Some(Tok::Ident(w)) if w.starts_with('p') && w[1..].parse::<f64>().is_ok() => {
                let p: f64 = w[1..].parse().unwrap_or(0.0);
                if metric.is_text() {
                    return Err(self.err(vcol, format!("`{}` is text: it has no percentiles", metric.name)));
                }
                if !(0.0..=100.0).contains(&p) {
                    return Err(self.err(vcol, format!("percentile {p} is not between 0 and 100")));
                }
                Operand::Percentile(p)
            }
            Some(Tok::Num { value, text }) => {
                if metric.is_text() {
                    return Err(self.err(vcol, format!("`{}` is text: compare it with \"quoted text\"", metric.name)));
                }
                Operand::Int(self.number(vcol, value, &text, metric.unit)?)
            }
            Some(Tok::Ident(w)) => return Err(self.err(vcol, format!("`{w}` is not a value (a number with its unit, pNN, or \"quoted text\")"))),
            _ => return Err(self.err(vcol, format!("expected a value after `{name}`"))),
        };
        self.at += 1;
        Ok(Node::Cmp { column, op, operand })
    }

    fn number(&self, col: usize, value: f64, text: &str, unit: Unit) -> Result<i64> {
        let suffix = text.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let scale: f64 = match (unit.is_time(), unit == Unit::Bytes, suffix) {
            (_, _, "") => 1.0,
            (true, _, "ns") => 1.0,
            (true, _, "us" | "µs") => 1e3,
            (true, _, "ms") => 1e6,
            (true, _, "s") => 1e9,
            (true, _, u) => return Err(self.err(col, format!("unknown time unit `{u}` (use ns, us, ms or s)"))),
            (_, true, "B") => 1.0,
            (_, true, "KB" | "kB") => 1e3,
            (_, true, "MB") => 1e6,
            (_, true, "GB") => 1e9,
            (_, true, "KiB") => 1024.0,
            (_, true, "MiB") => 1024.0 * 1024.0,
            (_, true, "GiB") => 1024.0 * 1024.0 * 1024.0,
            (_, true, u) => return Err(self.err(col, format!("unknown size unit `{u}` (use B, KB, MB, GB, KiB, MiB or GiB)"))),
            (_, _, u) => return Err(self.err(col, format!("a {} takes no unit (`{u}`)", unit.name()))),
        };
        let v = (value * scale).round();
        if !v.is_finite() || v.abs() >= 9.2e18 {
            return Err(self.err(col, format!("`{text}` is out of range")));
        }
        Ok(v as i64)
    }
}

/// Levenshtein distance (for suggestions).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl Expr {
    /// Parses `text` against the metrics of `db`.
    pub fn parse(text: &str, db: &Executions) -> Result<Expr> {
        let toks = Lexer { chars: text.chars().collect(), at: 0, text }.tokens()?;
        let end = text.chars().count();
        let mut p = Parser { toks, at: 0, text, db, end };
        let root = p.or()?;
        if p.at < p.toks.len() {
            let col = p.here();
            let what = match &p.toks[p.at].1 {
                Tok::Close => "a `)` without its `(`".to_string(),
                _ => "`&&` or `||` between comparisons".to_string(),
            };
            return Err(p.err(col, format!("expected {what}")));
        }
        Ok(Expr { text: text.to_string(), root })
    }

    /// The executions of `db` it selects.
    pub fn select(&self, db: &Executions) -> Selection {
        eval(&self.root, db)
    }
}

/// The nearest-rank percentile `p` of the values of column `c` (`None` when no execution
/// has one).
pub fn percentile(db: &Executions, c: usize, p: f64) -> Option<i64> {
    let Values::Int(v) = &db.columns[c] else { return None };
    let mut x: Vec<i64> = v.iter().copied().filter(|&y| y != crate::metrics::MISSING).collect();
    if x.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * x.len() as f64).ceil() as usize;
    let k = rank.clamp(1, x.len()) - 1;
    Some(*x.select_nth_unstable(k).1)
}

fn eval(n: &Node, db: &Executions) -> Selection {
    let len = db.len();
    match n {
        Node::All => Selection::all(len),
        Node::Not(x) => eval(x, db).not(),
        Node::And(a, b) => eval(a, db).and(&eval(b, db)),
        Node::Or(a, b) => eval(a, db).or(&eval(b, db)),
        Node::Cmp { column, op, operand } => {
            let op = *op;
            match (&db.columns[*column], operand) {
                (Values::Int(v), Operand::Int(x)) => cmp_ints(v, op, *x),
                (Values::Int(v), Operand::Percentile(p)) => match percentile(db, *column, *p) {
                    Some(x) => cmp_ints(v, op, x),
                    None => Selection::none(len),
                },
                (Values::Text { codes, dict }, Operand::Text(s)) => {
                    let code = dict.iter().position(|d| d == s).map(|c| c as u32);
                    Selection::from_fn(len, |i| codes[i] != crate::table::NO_TEXT && op.holds(Some(codes[i]), code))
                }
                _ => Selection::none(len),
            }
        }
    }
}

fn cmp_ints(v: &[i64], op: Op, x: i64) -> Selection {
    let mut s = Selection::none(v.len());
    for (k, chunk) in v.chunks(64).enumerate() {
        let mut w = 0u64;
        for (b, &y) in chunk.iter().enumerate() {
            w |= u64::from(y != crate::metrics::MISSING && op.holds(y, x)) << b;
        }
        s.bits[k] = w;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{fixed, Metric, MISSING};

    fn db() -> Executions {
        let mut m = fixed();
        m.push(Metric::new("end.name", Unit::Text, ""));
        m.push(Metric::new("begin.size", Unit::Bytes, ""));
        let mut db = Executions::with_metrics(m);
        for i in 0..10i64 {
            for (k, c) in db.columns.iter_mut().enumerate() {
                match c {
                    Values::Int(v) => v.push(match k {
                        1 => 100 + i % 2,
                        7 => (i + 1) * 1_000_000,
                        11 => i * 100_000,
                        24 => if i == 0 { MISSING } else { i * 1024 },
                        _ => 0,
                    }),
                    Values::Text { codes, dict } => {
                        if dict.is_empty() {
                            dict.extend(["get".to_string(), "put".to_string()]);
                        }
                        codes.push(if i == 9 { crate::table::NO_TEXT } else { (i % 2) as u32 });
                    }
                }
            }
            db.ecct.push(&[]);
        }
        db
    }

    fn sel(text: &str) -> Vec<usize> {
        let d = db();
        Expr::parse(text, &d).unwrap().select(&d).iter().collect()
    }

    fn err(text: &str) -> String {
        Expr::parse(text, &db()).unwrap_err().to_string()
    }

    #[test]
    fn comparisons_and_logic() {
        assert_eq!(sel("duration<2ms"), vec![0]);
        assert_eq!(sel("duration_ns <= 2000000"), vec![0, 1]);
        assert_eq!(sel("duration>=p90"), vec![8, 9]);
        assert_eq!(sel("duration>p50 && tid==101"), vec![5, 7, 9]);
        assert_eq!(sel("tid==100 && timer>0.25ms"), vec![4, 6, 8]);
        assert_eq!(sel("!(tid==100) || duration=1ms"), vec![0, 1, 3, 5, 7, 9]);
        assert_eq!(sel("all"), (0..10).collect::<Vec<_>>());
        assert_eq!(sel("end.name == \"put\""), vec![1, 3, 5, 7]);
        assert_eq!(sel("end.name != 'put'"), vec![0, 2, 4, 6, 8]);
        // Missing values match nothing, their negation matches.
        assert_eq!(sel("begin.size < 2KiB"), vec![1]);
        assert_eq!(sel("!(begin.size >= 0B)"), vec![0]);
        assert_eq!(sel("duration > 1.5s || duration < -1"), Vec::<usize>::new());
    }

    #[test]
    fn mistakes_say_where() {
        let e = err("tid==1234 && timer>1mx");
        assert!(e.contains("at column 20") && e.contains("unknown time unit `mx`"), "{e}");
        let e = err("durration<2ms");
        assert!(e.contains("column 1") && e.contains("did you mean duration_ns?"), "{e}");
        let e = err("duration<<2ms");
        assert!(e.contains("column 10") && e.contains("expected a value"), "{e}");
        let e = err("duration<2ms tid==3");
        assert!(e.contains("column 14") && e.contains("`&&` or `||`"), "{e}");
        let e = err("(duration<2ms");
        assert!(e.contains("expected `)`"), "{e}");
        let e = err("end.name > \"a\"");
        assert!(e.contains("text compares with == or != only"), "{e}");
        let e = err("tid == 3ms");
        assert!(e.contains("takes no unit"), "{e}");
        let e = err("duration < p101");
        assert!(e.contains("not between 0 and 100"), "{e}");
        let e = err("");
        assert!(e.contains("column 1") && e.contains("expected a comparison"), "{e}");
        let e = err("end.name == \"abc");
        assert!(e.contains("quote is missing"), "{e}");
        let e = err("duration ~ 3");
        assert!(e.contains("unexpected `~`"), "{e}");
        assert!(!e.contains('\n'));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_fails_cleanly(s in "[a-z_=<>!&|()'\" 0-9.µp]{0,30}") {
            let d = db();
            if let Ok(e) = Expr::parse(&s, &d) {
                let _ = e.select(&d);
            }
        }
    }

    #[test]
    fn selections() {
        let s = Selection::all(70);
        assert_eq!(s.count(), 70);
        assert_eq!(s.clone().not().count(), 0);
        assert_eq!(Selection::from_ids(70, &[3, 69, 70, 3]).iter().collect::<Vec<_>>(), vec![3, 69]);
        let t = Selection::from_fn(70, |i| i % 3 == 0);
        assert_eq!(t.iter().collect::<Vec<_>>(), (0..70).filter(|i| i % 3 == 0).collect::<Vec<_>>());
        assert!(t.contains(69) && !t.contains(68) && !t.contains(700));
    }
}
