//! Writing CTF 2 metadata.
