//! `tracelens serve`: the executions database as a web page (`tracelens_web`).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use tracelens_compare::db;
use tracelens_web::{Model, Server, ServerOptions};

use crate::units::thousands;

pub const EXAMPLES: &str = "\
Examples:
  # Serve runs.db on http://127.0.0.1:8470/ and open it in the browser
  tracelens serve runs.db --open

  # Any free port (the URL is printed)
  tracelens serve runs.db --port 0

  # Serve other machines too (anyone who can reach the port can read the database)
  tracelens serve runs.db --bind 0.0.0.0 --port 8470

The page (the TraceCompare thesis, 2015, chapter 4):
  A histogram per metric (duration, each critical-path state, CPU time, switches, system
  calls, bytes, dimensions) with group A in blue and group B in red over all executions in
  grey, each scaled to its own peak; `log` switches a histogram to a log axis. Dragging
  across a histogram sets the range of the group chosen above (A or B) on that metric; a
  group is the executions within all its ranges. Double-click a histogram to drop the
  group's range on it. Histograms, counts and the flame graph follow the brush as it moves.
  The differential flame graph: width = mean time in B, colour = z = (mean B - mean A) /
  sd A (red: B spends more, blue: less, neutral under |z| = 1, saturated at 3), dashed
  frames are not in B; click a frame to zoom, the search box highlights frames by name, the
  tooltip gives both means, z and counts. The tables list executions of each group by
  duration (trace, thread, begin). The groups, axes, zoom and search are in the URL: a link
  reopens the same view. Without them, A = executions at or below the median duration and
  B = the slowest tenth.

Security: the server listens on 127.0.0.1 and answers only loopback clients that name it
localhost, 127.0.0.1 or [::1] (a page elsewhere cannot reach it through DNS rebinding);
--bind with another address serves whoever reaches it, with a warning.

For a file to share without a server: tracelens compare runs.db --html page.html";

/// Options of `tracelens serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The database (`tracelens executions -o FILE`)
    #[arg(value_name = "DB")]
    pub database: PathBuf,
    /// The port (0: any free port)
    #[arg(long, short = 'p', value_name = "P", default_value = "8470")]
    pub port: u16,
    /// The address to listen on; one that is not loopback serves other machines
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Open the page in the desktop's browser (xdg-open)
    #[arg(long)]
    pub open: bool,
}

/// Runs `tracelens serve` until interrupted.
pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let start = std::time::Instant::now();
    let executions = db::open(&args.database)?;
    let title = args.database.file_name().map_or_else(|| args.database.display().to_string(), |n| n.to_string_lossy().into_owned());
    let n = executions.len();
    let allow_remote = !args.bind.is_loopback();
    if allow_remote {
        eprintln!("tracelens: warning: serving {} on {} to any machine that reaches it, without authentication", args.database.display(), args.bind);
    }
    let model = Model::new(executions, &title);
    let opts = ServerOptions { addr: SocketAddr::new(args.bind, args.port), allow_remote, ..ServerOptions::default() };
    let server = Server::bind(model, opts).with_context(|| if args.port != 0 { format!("is port {} taken? (--port 0 picks a free one)", args.port) } else { "cannot serve".into() })?;
    let url = server.url();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "serving {} ({} executions, ready in {:.2} s) at {url} (Ctrl-C to stop)", args.database.display(), thousands(n as u64), start.elapsed().as_secs_f64())?;
        out.flush()?;
    }
    if args.open {
        if let Err(e) = std::process::Command::new("xdg-open").arg(&url).spawn() {
            eprintln!("tracelens: warning: cannot open a browser (xdg-open: {e}); open {url}");
        }
    }
    server.run();
    Ok(ExitCode::SUCCESS)
}
