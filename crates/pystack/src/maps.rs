//! The lines of `/proc/PID/maps`, borrowed from its text (also what `tracelens-record` reads
//! a process's executable mappings with).

/// One mapping: `START-END PERMS OFFSET MAJ:MIN INODE PATH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapsLine<'a> {
    /// First address.
    pub start: u64,
    /// Address after the last.
    pub end: u64,
    /// `rwxp`-style permissions.
    pub perms: &'a str,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The file's device, major and minor (0 when unreadable).
    pub dev: (u32, u32),
    /// The file's inode (0 for anonymous memory).
    pub inode: u64,
    /// The file, a `[name]` such as `[vdso]`, or empty.
    pub path: &'a str,
}

/// The mappings of `/proc/PID/maps` text, in its order (the kernel's: by address); lines
/// that do not parse are passed over.
pub fn maps_lines(text: &str) -> impl Iterator<Item = MapsLine<'_>> {
    text.lines().filter_map(|line| {
        let mut it = line.splitn(6, ' ');
        let (range, perms, off, dev, inode) = (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
        let path = it.next().unwrap_or("").trim_start();
        let (s, e) = range.split_once('-')?;
        let hex = |x: &str| u64::from_str_radix(x, 16).ok();
        let hex32 = |x: &str| u32::from_str_radix(x, 16).unwrap_or(0);
        let dev = dev.split_once(':').map(|(a, b)| (hex32(a), hex32(b))).unwrap_or((0, 0));
        Some(MapsLine { start: hex(s)?, end: hex(e)?, perms, pgoff: hex(off)?, dev, inode: inode.parse().unwrap_or(0), path })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let t = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/python3.11\n\
                 55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:1a 1234       /usr/bin/my prog\n\
                 7ffd1b5fe000-7ffd1b600000 r-xp 00000000 00:00 0                          [vdso]\n\
                 7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n\
                 not a mapping\n\
                 7f0000000000-zz rw-p 00000000 00:00 0\n";
        let m: Vec<MapsLine> = maps_lines(t).collect();
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[1],
            MapsLine { start: 0x55d0c0a01000, end: 0x55d0c0a02000, perms: "r-xp", pgoff: 0x1000, dev: (0xfd, 0x1a), inode: 1234, path: "/usr/bin/my prog" }
        );
        assert_eq!(m[2].path, "[vdso]");
        assert_eq!((m[3].path, m[3].inode), ("", 0));
    }
}
