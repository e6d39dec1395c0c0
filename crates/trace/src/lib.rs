//! Trace sets.
