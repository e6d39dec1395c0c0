//! The options of the text output: babeltrace2's `--names`, `--fields` and clock options.

use crate::{Error, Result};

/// What the text output shows (babeltrace2's `--names`, `--fields` and clock options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// Show payload field names (`--names=payload`).
    pub names_payload: bool,
    /// Show context field names (`--names=context`).
    pub names_context: bool,
    /// Show header field names: `timestamp = `, `delta = `, `name = ` ... (`--names=header`).
    pub names_header: bool,
    /// Show scope names: `stream.packet.context = ` ... (`--names=scope`).
    pub names_scope: bool,
    /// Show the trace name (`--fields=trace`).
    pub field_trace: bool,
    /// Show the `hostname` environment entry (`--fields=trace:hostname`).
    pub field_hostname: bool,
    /// Show the `domain` environment entry (`--fields=trace:domain`).
    pub field_domain: bool,
    /// Show the `procname` environment entry (`--fields=trace:procname`).
    pub field_procname: bool,
    /// Show the `vpid` environment entry (`--fields=trace:vpid`).
    pub field_vpid: bool,
    /// Show the event class's log level (`--fields=loglevel`).
    pub field_loglevel: bool,
    /// Show the event class's EMF URI (`--fields=emf`).
    pub field_emf: bool,
    /// Print the time since the previous event (`(+S.NNNNNNNNN)`); babeltrace2's `--no-delta`
    /// clears it.
    pub delta: bool,
    /// Print clock cycles instead of times (`--clock-cycles`).
    pub clock_cycles: bool,
    /// Print times as seconds since the origin (`--clock-seconds`).
    pub clock_seconds: bool,
    /// Print the date too (`--clock-date`).
    pub clock_date: bool,
    /// Print times in UTC instead of local time (`--clock-gmt`).
    pub clock_gmt: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            names_payload: true,
            names_context: true,
            names_header: false,
            names_scope: false,
            field_trace: false,
            field_hostname: true,
            field_domain: false,
            field_procname: true,
            field_vpid: true,
            field_loglevel: false,
            field_emf: false,
            delta: true,
            clock_cycles: false,
            clock_seconds: false,
            clock_date: false,
            clock_gmt: false,
        }
    }
}

fn split_list(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl TextOptions {
    /// Applies a babeltrace2 `--names` list: `payload` (or `args`, `arg`), `context` (or
    /// `ctx`), `scope`, `header`, `all`, `none`. Naming any item hides the others (as
    /// babeltrace2 does); `all` shows everything; `none` hides everything.
    pub fn set_names(&mut self, list: &str) -> Result<()> {
        let (mut all, mut none, mut items) = (false, false, Vec::new());
        for item in split_list(list) {
            match item {
                "payload" | "args" | "arg" => items.push(0),
                "context" | "ctx" => items.push(1),
                "scope" => items.push(2),
                "header" => items.push(3),
                "all" => all = true,
                "none" => none = true,
                other => return Err(Error::Invalid(format!("unknown name `{other}` in --names (expected payload, context, scope, header, all or none)"))),
            }
        }
        if all && none {
            return Err(Error::Invalid("only one of `all` and `none` can be given to --names".into()));
        }
        let default = if all {
            Some(true)
        } else if none || !items.is_empty() {
            Some(false)
        } else {
            None
        };
        if let Some(d) = default {
            self.names_payload = d;
            self.names_context = d;
            self.names_header = d;
            self.names_scope = d;
        }
        for i in items {
            match i {
                0 => self.names_payload = true,
                1 => self.names_context = true,
                2 => self.names_scope = true,
                _ => self.names_header = true,
            }
        }
        Ok(())
    }

    /// Applies a babeltrace2 `--fields` list: `trace`, `trace:hostname`, `trace:domain`,
    /// `trace:procname`, `trace:vpid`, `loglevel`, `emf`, `callsite`, `all`. Naming any item
    /// hides the others unless `all` is given.
    pub fn set_fields(&mut self, list: &str) -> Result<()> {
        let (mut all, mut items) = (false, Vec::new());
        for item in split_list(list) {
            match item {
                "trace" | "trace:hostname" | "trace:domain" | "trace:procname" | "trace:vpid" | "loglevel" | "emf" | "callsite" => {
                    items.push(item)
                }
                "all" => all = true,
                other => return Err(Error::Invalid(format!(
                    "unknown field `{other}` in --fields (expected trace, trace:hostname, trace:domain, trace:procname, trace:vpid, loglevel, emf, callsite or all)"
                ))),
            }
        }
        if all || !items.is_empty() {
            let d = all;
            self.field_trace = d;
            self.field_hostname = d;
            self.field_domain = d;
            self.field_procname = d;
            self.field_vpid = d;
            self.field_loglevel = d;
            self.field_emf = d;
        }
        for i in items {
            match i {
                "trace" => self.field_trace = true,
                "trace:hostname" => self.field_hostname = true,
                "trace:domain" => self.field_domain = true,
                "trace:procname" => self.field_procname = true,
                "trace:vpid" => self.field_vpid = true,
                "loglevel" => self.field_loglevel = true,
                "emf" => self.field_emf = true,
                _ => {} // callsite: babeltrace2 2.0 prints nothing for it either
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_fields() {
        let mut o = TextOptions::default();
        o.set_names("payload").unwrap();
        assert!(o.names_payload && !o.names_context && !o.names_header && !o.names_scope);
        let mut o = TextOptions::default();
        o.set_names("all").unwrap();
        assert!(o.names_payload && o.names_context && o.names_header && o.names_scope);
        assert!(TextOptions::default().set_names("all,none").is_err());
        let mut o = TextOptions::default();
        o.set_fields("trace:domain").unwrap();
        assert!(o.field_domain && !o.field_hostname && !o.field_procname);
    }
}
