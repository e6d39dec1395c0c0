//! How lttng-modules types system calls: `syscall_entry_X` has the call's arguments, typed
//! from their C types ([`arg_type`]; the path arguments it records as strings are strings),
//! and `syscall_exit_X` has `ret` and the output pointer arguments of the call
//! ([`EXIT_OUTPUTS`]).

use super::{Ty, HEX64, I32, I64, U16, U32, U64};

/// System-call arguments that LTTng records as user-space strings.
pub const STRING_ARGS: &[&str] = &[
    "filename", "pathname", "oldname", "newname", "name", "path", "type", "_type", "u_name", "name_user", "specialfile", "dev_name", "dir_name",
    "new_root", "put_old", "oldpath", "newpath", "library", "uname",
];

/// Output pointer arguments LTTng adds to `syscall_exit_X` (from lttng-modules' x86_64
/// system call instrumentation).
pub const EXIT_OUTPUTS: &[(&str, &[&str])] = &[
    ("accept4", &["upeer_sockaddr", "upeer_addrlen"]),
    ("adjtimex", &["txc_p"]),
    ("clock_adjtime", &["utx"]),
    ("clock_getres", &["tp"]),
    ("clock_gettime", &["tp"]),
    ("clock_nanosleep", &["rmtp"]),
    ("epoll_pwait", &["events"]),
    ("epoll_wait", &["events"]),
    ("fcntl", &["arg"]),
    ("fgetxattr", &["value"]),
    ("flistxattr", &["list"]),
    ("fstatfs", &["buf"]),
    ("futex", &["uaddr", "uaddr2"]),
    ("get_mempolicy", &["policy", "nmask"]),
    ("get_robust_list", &["head_ptr", "len_ptr"]),
    ("getcpu", &["cpup", "nodep", "tcache"]),
    ("getcwd", &["buf"]),
    ("getdents", &["dirent"]),
    ("getdents64", &["dirent"]),
    ("getgroups", &["grouplist"]),
    ("getitimer", &["value"]),
    ("getpeername", &["usockaddr", "usockaddr_len"]),
    ("getresgid", &["rgidp", "egidp", "sgidp"]),
    ("getresuid", &["ruidp", "euidp", "suidp"]),
    ("getrlimit", &["rlim"]),
    ("getrusage", &["ru"]),
    ("getsockname", &["usockaddr", "usockaddr_len"]),
    ("getsockopt", &["optval", "optlen"]),
    ("gettimeofday", &["tv", "tz"]),
    ("getxattr", &["value"]),
    ("io_cancel", &["result"]),
    ("io_getevents", &["events", "timeout"]),
    ("ioctl", &["arg"]),
    ("keyctl", &["arg2", "arg3", "arg4", "arg5"]),
    ("lgetxattr", &["value"]),
    ("listxattr", &["list"]),
    ("llistxattr", &["list"]),
    ("lookup_dcookie", &["buf"]),
    ("mincore", &["vec"]),
    ("move_pages", &["status"]),
    ("mq_getsetattr", &["u_omqstat"]),
    ("mq_timedreceive", &["u_msg_ptr", "u_msg_prio"]),
    ("msgctl", &["buf"]),
    ("msgrcv", &["msgp"]),
    ("name_to_handle_at", &["handle", "mnt_id"]),
    ("nanosleep", &["rmtp"]),
    ("newfstat", &["statbuf"]),
    ("newfstatat", &["statbuf"]),
    ("newlstat", &["statbuf"]),
    ("newstat", &["statbuf"]),
    ("newuname", &["name"]),
    ("poll", &["ufds"]),
    ("ppoll", &["ufds"]),
    ("prctl", &["arg2"]),
    ("pread64", &["buf"]),
    ("preadv", &["vec"]),
    ("prlimit64", &["old_rlim"]),
    ("process_vm_readv", &["lvec"]),
    ("pselect6", &["inp", "outp", "exp", "tsp"]),
    ("ptrace", &["addr", "data"]),
    ("quotactl", &["addr"]),
    ("read", &["buf"]),
    ("readlink", &["buf"]),
    ("readlinkat", &["buf"]),
    ("readv", &["vec"]),
    ("recvfrom", &["ubuf", "addr", "addr_len"]),
    ("recvmmsg", &["mmsg", "timeout"]),
    ("recvmsg", &["msg"]),
    ("rt_sigaction", &["oact"]),
    ("rt_sigpending", &["uset"]),
    ("rt_sigprocmask", &["oset"]),
    ("rt_sigtimedwait", &["uthese", "uinfo"]),
    ("sched_getaffinity", &["user_mask_ptr"]),
    ("sched_getparam", &["param"]),
    ("sched_rr_get_interval", &["interval"]),
    ("select", &["inp", "outp", "exp", "tvp"]),
    ("semctl", &["arg"]),
    ("semtimedop", &["timeout"]),
    ("sendfile64", &["offset"]),
    ("setitimer", &["ovalue"]),
    ("shmctl", &["buf"]),
    ("sigaltstack", &["uoss"]),
    ("socketpair", &["usockvec"]),
    ("statfs", &["buf"]),
    ("sysctl", &["args"]),
    ("sysinfo", &["info"]),
    ("syslog", &["buf"]),
    ("time", &["tloc"]),
    ("timer_create", &["created_timer_id"]),
    ("timer_gettime", &["setting"]),
    ("timer_settime", &["old_setting"]),
    ("timerfd_gettime", &["otmr"]),
    ("timerfd_settime", &["otmr"]),
    ("times", &["tbuf"]),
    ("ustat", &["ubuf"]),
    ("wait4", &["stat_addr", "ru"]),
    ("waitid", &["infop", "ru"]),
    ("writev", &["vec"]),
];

/// LTTng's type for a system-call argument of C type `ctype` named `name`.
pub fn arg_type(ctype: &str, name: &str) -> Ty {
    let t = ctype.trim();
    if t.contains('*') {
        let plain = t.trim_start_matches("const ").trim();
        if (plain == "char *" || plain == "char*") && STRING_ARGS.contains(&name) {
            return Ty::Str;
        }
        return HEX64;
    }
    let t = t.trim_start_matches("const ").trim();
    match t {
        "int" | "pid_t" | "key_serial_t" | "clockid_t" | "timer_t" | "mqd_t" | "rwf_t" | "s32" | "__s32" | "key_t" | "old_uid_t" | "old_gid_t" => I32,
        "unsigned int" | "unsigned" | "u32" | "__u32" | "uid_t" | "gid_t" | "qid_t" | "compat_uint_t" => U32,
        "umode_t" | "unsigned short" | "u16" | "__u16" => U16,
        "long" | "loff_t" | "off_t" | "ssize_t" | "s64" | "__s64" | "time_t" | "__kernel_old_time_t" | "long long" => I64,
        _ => U64,
    }
}

/// The `(name, type)` fields of `syscall_exit_NAME`: `ret`, then the output pointer arguments
/// of the call.
pub fn exit_fields(name: &str) -> Vec<(&'static str, Ty)> {
    let mut out = vec![("ret", I64)];
    if let Some((_, outs)) = EXIT_OUTPUTS.iter().find(|(n, _)| *n == name) {
        out.extend(outs.iter().map(|o| (*o, HEX64)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types() {
        assert_eq!(arg_type("unsigned int", "fd"), U32);
        assert_eq!(arg_type("const char *", "buf"), HEX64);
        assert_eq!(arg_type("char *", "buf"), HEX64);
        assert_eq!(arg_type("const char *", "filename"), Ty::Str);
        assert_eq!(arg_type("const char *const *", "argv"), HEX64);
        assert_eq!(arg_type("size_t", "count"), U64);
        assert_eq!(arg_type("int", "dfd"), I32);
        assert_eq!(arg_type("umode_t", "mode"), U16);
        assert_eq!(arg_type("loff_t", "pos"), I64);
        assert_eq!(exit_fields("read"), [("ret", I64), ("buf", HEX64)]);
        assert_eq!(exit_fields("close"), [("ret", I64)]);
    }
}
