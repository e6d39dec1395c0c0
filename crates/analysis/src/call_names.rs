//! System call names, numbered once per trace set, so that per-call state holds a small
//! number instead of a string.

use tracelens_trace::TraceSet;

use crate::id_map::IdMap;

/// System call names, numbered once for the trace set.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallNames {
    names: Vec<Box<str>>,
    ids: IdMap<Box<str>, u16>,
}

impl CallNames {
    pub(crate) fn new(set: &TraceSet) -> CallNames {
        let mut cn = CallNames::default();
        cn.id("unknown");
        for nr in 0..1024 {
            if let Some(n) = crate::kernel::syscall_name(nr) {
                cn.id(n);
            }
        }
        for t in &set.traces {
            for p in t.plans.iter() {
                for e in p.events.iter() {
                    let name = e.class.name.as_str();
                    let name = name.rsplit_once(':').map_or(name, |(_, e)| e);
                    let base = name.strip_prefix("compat_").unwrap_or(name);
                    for pre in ["syscall_entry_", "syscall_exit_", "sys_enter_", "sys_exit_", "sys_"] {
                        if let Some(s) = base.strip_prefix(pre) {
                            cn.id(s);
                        }
                    }
                }
            }
        }
        cn
    }

    fn id(&mut self, name: &str) -> u16 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len().min(u16::MAX as usize) as u16;
        if (i as usize) == self.names.len() {
            self.names.push(name.into());
            self.ids.insert(name.into(), i);
        }
        i
    }

    /// The id of `name` (0, `unknown`, for a name not numbered at the start).
    #[inline]
    pub(crate) fn get(&self, cache: &mut IdMap<(usize, usize), u16>, name: &str) -> u16 {
        let k = (name.as_ptr() as usize, name.len());
        if let Some(&i) = cache.get(&k) {
            return i;
        }
        let i = self.ids.get(name).copied().unwrap_or(0);
        cache.insert(k, i);
        i
    }

    pub(crate) fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map_or("unknown", |s| s)
    }

    /// How many names are numbered.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}
