//! The differential flame graph of a comparison (the TraceCompare thesis, section 4.4.4,
//! Fig. 4.6), as SVG, and the folded stacks that other flame graph tools read.
//!
//! * Width: a frame is as wide as its mean inclusive time in group B. A frame group B never
//!   reaches (present in A only) is drawn as wide as its mean in A, with a dashed outline,
//!   after its siblings; its ancestors widen by as much, so that what B no longer does stays
//!   visible.
//! * Colour: z = (mean_B − mean_A) / sd_A. Neutral when |z| < 1 (normal variation); red when
//!   B spends more (z ≥ 1), blue when it spends less (z ≤ −1), deeper up to |z| = 3 and
//!   saturated beyond.
//! * Each frame's tooltip (`<title>`) gives both means, the standard deviation in A, z and
//!   how many executions of each group have the frame.
//!
//! The folded output has one line per calling context, `frame;frame;frame A B`, with the
//! mean self time in ns of A and of B: `inferno-flamegraph` and `flamegraph.pl` draw it as a
//! differential flame graph (their colours are by the difference of the two columns, not
//! by z).

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::ecct::Tree;
use crate::stats::{Comparison, NodeDiff};

/// How to draw the SVG.
#[derive(Clone, Debug, PartialEq)]
pub struct SvgOptions {
    /// Image width in pixels. Default 1200.
    pub width: f64,
    /// Height of a frame in pixels. Default 16.
    pub frame_height: f64,
    /// Frames narrower than this many pixels are left out. Default 0.1.
    pub min_width: f64,
    /// Title. Default "Differential flame graph".
    pub title: String,
}

impl Default for SvgOptions {
    fn default() -> SvgOptions {
        SvgOptions { width: 1200.0, frame_height: 16.0, min_width: 0.1, title: "Differential flame graph".into() }
    }
}

/// The fill colour of a frame of z-score `z`: neutral under 1 in magnitude, then red (B
/// more) or blue (B less), saturated at 3.
pub fn color(z: f64) -> (u8, u8, u8) {
    if z.is_nan() || z.abs() < 1.0 {
        return (221, 221, 210);
    }
    let t = ((z.abs() - 1.0) / 2.0).clamp(0.0, 1.0);
    let fade = |full: f64, light: f64| (light + (full - light) * t).round() as u8;
    if z > 0.0 {
        (fade(220.0, 250.0), fade(30.0, 190.0), fade(30.0, 170.0))
    } else {
        (fade(40.0, 180.0), fade(90.0, 205.0), fade(220.0, 250.0))
    }
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// A duration in words: `12.3 ms`, `450 µs`, `80 ns`.
pub fn human_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// z in words (`+3.2`, `+inf`).
pub fn human_z(z: f64) -> String {
    if z.is_infinite() {
        if z > 0.0 { "+inf".into() } else { "-inf".into() }
    } else {
        format!("{z:+.2}")
    }
}

struct Layout<'c> {
    /// Per tree node: its entry in the comparison, if any.
    diff: Vec<Option<&'c NodeDiff>>,
    /// Per tree node: its children in the comparison, B's (by name) then A-only ones.
    children: Vec<Vec<u32>>,
    /// Per tree node: the width it takes, in ns.
    width: Vec<f64>,
}

fn layout<'c>(c: &'c Comparison, tree: &Tree) -> Layout<'c> {
    let n = tree.len();
    let mut diff: Vec<Option<&NodeDiff>> = vec![None; n];
    for d in &c.nodes {
        if let Some(slot) = diff.get_mut(d.node as usize) {
            *slot = Some(d);
        }
    }
    let mut children = vec![Vec::new(); n];
    for (k, d) in diff.iter().enumerate().skip(1) {
        if d.is_some() {
            let p = tree.parent[k] as usize;
            children[p].push(k as u32);
        }
    }
    let absent = |k: u32| diff[k as usize].is_none_or(|d| d.mean_b_ns <= 0.0);
    for list in children.iter_mut() {
        list.sort_by(|&x, &y| absent(x).cmp(&absent(y)).then_with(|| tree.frame_name(x).cmp(tree.frame_name(y))));
    }
    // Widths bottom up (children have larger ids than their parents).
    let mut width = vec![0f64; n];
    for k in (0..n).rev() {
        let own = if k == 0 { c.b.mean_duration_ns } else { diff[k].map_or(0.0, |d| if d.mean_b_ns > 0.0 { d.mean_b_ns } else { d.mean_a_ns }) };
        let extra: f64 = children[k].iter().filter(|&&ch| absent(ch)).map(|&ch| width[ch as usize]).sum();
        let inner: f64 = children[k].iter().map(|&ch| width[ch as usize]).sum();
        width[k] = (own + if k == 0 || !absent(k as u32) { extra } else { 0.0 }).max(inner);
    }
    Layout { diff, children, width }
}

/// Writes the differential flame graph of `c` (made over `tree`) as SVG.
pub fn write_svg(out: &mut dyn Write, c: &Comparison, tree: &Tree, opts: &SvgOptions) -> io::Result<()> {
    let l = layout(c, tree);
    let total = l.width[0].max(1.0);
    let scale = (opts.width - 20.0) / total;
    // Depth of the deepest frame drawn.
    let mut depth = vec![0usize; tree.len()];
    let mut max_depth = 0;
    for k in 1..tree.len() {
        if l.diff[k].is_some() {
            depth[k] = depth[tree.parent[k] as usize] + 1;
            max_depth = max_depth.max(depth[k]);
        }
    }
    let fh = opts.frame_height;
    let top = 70.0;
    let height = top + (max_depth as f64 + 1.0) * fh + 40.0;
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" standalone="no"?>"#);
    let _ = writeln!(
        s,
        r#"<svg version="1.1" width="{w}" height="{height}" viewBox="0 0 {w} {height}" xmlns="http://www.w3.org/2000/svg">"#,
        w = opts.width
    );
    let _ = writeln!(s, r#"<style>text {{ font-family: monospace; font-size: 12px; fill: #000; }} .title {{ font-size: 16px; }} rect {{ stroke: #fff; stroke-width: 0.5; }} .absent {{ stroke: #23a; stroke-dasharray: 3 2; stroke-width: 1; }}</style>"#);
    let _ = writeln!(s, r##"<rect x="0" y="0" width="{}" height="{height}" fill="#fbfbf8" stroke="none"/>"##, opts.width);
    let _ = writeln!(s, r#"<text class="title" x="{}" y="22" text-anchor="middle">{}</text>"#, opts.width / 2.0, escape(&opts.title));
    let _ = writeln!(
        s,
        r#"<text x="10" y="40">B: {} ({} executions, mean {}) against A: {} ({} executions, mean {})</text>"#,
        escape(&c.b.expr),
        c.b.count,
        escape(&human_ns(c.b.mean_duration_ns)),
        escape(&c.a.expr),
        c.a.count,
        escape(&human_ns(c.a.mean_duration_ns))
    );
    let _ = writeln!(s, r#"<text x="10" y="56">width: mean time in B; red: more in B, blue: less, by z = (mean B - mean A) / sd A (neutral under 1, saturated at 3); dashed: not in B</text>"#);
    // Frames, root at the bottom, depth first.
    let mut stack: Vec<(u32, f64)> = vec![(0, 10.0)];
    while let Some((k, x)) = stack.pop() {
        let w = l.width[k as usize] * scale;
        if w < opts.min_width {
            continue;
        }
        let y = top + (max_depth - depth[k as usize]) as f64 * fh;
        let (name, tip, fill, absent) = match l.diff[k as usize] {
            None => (
                "all".to_string(),
                format!("all: the whole execution\nB: {} mean ({} executions)\nA: {} mean ({} executions)", human_ns(c.b.mean_duration_ns), c.b.count, human_ns(c.a.mean_duration_ns), c.a.count),
                (200, 200, 190),
                false,
            ),
            Some(d) => {
                let name = d.path.last().cloned().unwrap_or_default();
                let tip = format!(
                    "{}\nB: {} mean, in {} of {} executions\nA: {} mean (sd {}), in {} of {} executions\nz = {}\nself time: B {}, A {}",
                    d.path.join(" > "),
                    human_ns(d.mean_b_ns),
                    d.count_b,
                    c.b.count,
                    human_ns(d.mean_a_ns),
                    human_ns(d.sd_a_ns),
                    d.count_a,
                    c.a.count,
                    human_z(d.z),
                    human_ns(d.self_mean_b_ns),
                    human_ns(d.self_mean_a_ns)
                );
                (name, tip, color(d.z), d.mean_b_ns <= 0.0)
            }
        };
        let _ = write!(s, "<g><title>{}</title>", escape(&tip));
        let _ = write!(
            s,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{:.2}" fill="rgb({},{},{})"{}/>"#,
            fh - 1.0,
            fill.0,
            fill.1,
            fill.2,
            if absent { r#" class="absent""# } else { "" }
        );
        let chars = ((w - 6.0) / 7.2).floor();
        if chars >= 3.0 {
            let chars = chars as usize;
            let text: String = if name.chars().count() > chars { name.chars().take(chars.saturating_sub(2)).collect::<String>() + ".." } else { name };
            let _ = write!(s, r#"<text x="{:.2}" y="{:.2}">{}</text>"#, x + 3.0, y + fh - 4.5, escape(&text));
        }
        s.push_str("</g>\n");
        // Children left to right: pushed in reverse.
        let mut cx = x;
        let mut placed = Vec::new();
        for &ch in &l.children[k as usize] {
            placed.push((ch, cx));
            cx += l.width[ch as usize] * scale;
        }
        stack.extend(placed.into_iter().rev());
    }
    s.push_str("</svg>\n");
    out.write_all(s.as_bytes())
}

/// Writes the folded stacks of `c`: `frame;frame;frame A B` per node with self time, A and B
/// its mean self time in ns in each group (rounded). `;` in a frame name becomes `:`.
pub fn write_folded(out: &mut dyn Write, c: &Comparison) -> io::Result<()> {
    let mut lines: Vec<(String, u64, u64)> = c
        .nodes
        .iter()
        .map(|d| {
            let path: Vec<String> = d.path.iter().map(|f| f.replace(';', ":").replace(['\n', '\r'], " ")).collect();
            (path.join(";"), d.self_mean_a_ns.round().max(0.0) as u64, d.self_mean_b_ns.round().max(0.0) as u64)
        })
        .filter(|l| l.1 > 0 || l.2 > 0)
        .collect();
    lines.sort();
    for (p, a, b) in lines {
        writeln!(out, "{p} {a} {b}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecct::TreeBuilder;
    use crate::stats::Group;

    fn nd(node: u32, path: &[&str], a: f64, b: f64, sd: f64, sa: f64, sb: f64) -> NodeDiff {
        NodeDiff {
            node,
            path: path.iter().map(|s| s.to_string()).collect(),
            mean_a_ns: a,
            mean_b_ns: b,
            sd_a_ns: sd,
            z: crate::stats::z_score(a, b, sd),
            count_a: 1,
            count_b: 1,
            self_mean_a_ns: sa,
            self_mean_b_ns: sb,
        }
    }

    fn sample() -> (Comparison, Tree) {
        let mut tb = TreeBuilder::default();
        let main = tb.path(&["main"]);
        let work = tb.path(&["main", "work<T>"]);
        let old = tb.path(&["main", "old"]);
        let timer = tb.path(&["main", "work<T>", "[timer]"]);
        let tree = tb.finish();
        let nodes = vec![
            nd(main, &["main"], 100.0, 600.0, 10.0, 10.0, 10.0),
            nd(work, &["main", "work<T>"], 60.0, 590.0, 10.0, 50.0, 90.0),
            nd(timer, &["main", "work<T>", "[timer]"], 10.0, 500.0, 5.0, 10.0, 500.0),
            nd(old, &["main", "old"], 30.0, 0.0, 2.0, 30.0, 0.0),
        ];
        let c = Comparison {
            a: Group { expr: "duration<2ms".into(), count: 10, mean_duration_ns: 100.0 },
            b: Group { expr: "duration>=p90".into(), count: 2, mean_duration_ns: 600.0 },
            nodes,
            explain: vec![2],
            metrics: vec![],
        };
        (c, tree)
    }

    #[test]
    fn colours() {
        assert_eq!(color(0.5), color(-0.99));
        assert_eq!(color(3.0), color(50.0));
        assert_eq!(color(f64::INFINITY), color(3.0));
        assert_ne!(color(2.0), color(3.0));
        let (r, _, b) = color(3.0);
        assert!(r > b);
        let (r, _, b) = color(-3.0);
        assert!(b > r);
    }

    #[test]
    fn svg_has_every_frame_with_tooltips() {
        let (c, t) = sample();
        let mut out = Vec::new();
        write_svg(&mut out, &c, &t, &SvgOptions::default()).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("<?xml"));
        assert!(s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<rect ").count(), 1 + 5, "{s}");
        assert!(s.contains("work&lt;T&gt;"));
        assert!(s.contains("class=\"absent\""), "the frame only A has is drawn, dashed");
        assert!(s.contains("main &gt; work&lt;T&gt; &gt; [timer]\nB: 500 ns mean"));
        assert!(s.contains("z = +98.00"));
        // The root is as wide as B's mean plus what only A does.
        let root_w = 630.0 * (1200.0 - 20.0) / 630.0;
        assert!(s.contains(&format!("width=\"{root_w:.2}\"")), "{s}");
    }

    #[test]
    fn folded_lines_have_both_means() {
        let (c, _) = sample();
        let mut out = Vec::new();
        write_folded(&mut out, &c).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "main 10 10\nmain;old 30 0\nmain;work<T> 50 90\nmain;work<T>;[timer] 10 500\n");
    }
}
