//! Linux error numbers by name, for reports of failed system calls, and which return values
//! are errors.

/// Linux (x86_64, arm, arm64: asm-generic) error names, by number.
const ERRNO: &[&str] = &[
    "",
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// The largest error number a system call returns (the kernel's `MAX_ERRNO`).
pub const MAX_ERRNO: i64 = 4095;

/// Whether a system call's return value `ret` is an error: −4095 to −1, as the kernel's
/// `IS_ERR_VALUE` decides. Any other value is a success, negative ones included: an address
/// above 2 GiB returned by `mmap2` on a 32-bit system reads as a negative 32-bit number, and
/// `lseek` or `getpriority` may return such values too.
pub fn is_error_return(ret: i64) -> bool {
    (-MAX_ERRNO..0).contains(&ret)
}

/// The name of an error return value (`-2` → `ENOENT`), or the number (also for any value that
/// is not an error, see [`is_error_return`]).
pub fn errno_name(ret: i64) -> String {
    match usize::try_from(ret.unsigned_abs()).ok().and_then(|i| ERRNO.get(i)) {
        Some(n) if is_error_return(ret) && !n.is_empty() => (*n).to_string(),
        _ => ret.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_minus_4095_to_minus_1_are_errors() {
        for ret in [-1, -2, -11, -4095] {
            assert!(is_error_return(ret), "{ret}");
        }
        // Successes: 0, sizes, descriptors, and negative values that are not error codes: a
        // 32-bit mmap2 address above 2 GiB (0xb6f00000 as a signed 32-bit number), a
        // 64-bit one (0xffff_8000_0000_0000), the smallest i32 and i64.
        for ret in [0, 1, 4096, i64::MAX, -4096, 0xb6f0_0000_u32 as i32 as i64, 0xffff_8000_0000_0000_u64 as i64, i32::MIN as i64, i64::MIN] {
            assert!(!is_error_return(ret), "{ret}");
        }
        assert_eq!(errno_name(-2), "ENOENT");
        assert_eq!(errno_name(-4095), "-4095");
        assert_eq!(errno_name(-1_225_785_344), "-1225785344");
        assert_eq!(errno_name(2), "2");
    }
}
