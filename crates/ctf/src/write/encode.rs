//! Encoding values into a packet buffer: the [`Enc`] state (the buffer and what a reader
//! knows at each point: slots, the rebuilt clock, the last byte order), the general path that
//! walks the types and checks every value against them ([`Enc::put`]), and the two fast paths
//! that the general path backs: bodies of whole bytes ([`Enc::put_simple`]) and flattened
//! event headers ([`Enc::put_header`]). A fast path that declines is rolled back (see
//! [`Enc::mark`]) and the general path writes the same bytes or says what is wrong.

use super::header::Step;
use super::plan::WritePlan;
use super::{BitWriter, OwnedValue};
use crate::decode::next_clock;
use crate::ir::ByteOrder;
use crate::layout::{IntNode, NodeId, NodeKind, Role};
use crate::packet::PACKET_MAGIC;

/// A value that does not match its type: the message and the path to the field (innermost
/// component first).
#[derive(Debug)]
pub(super) struct FieldError {
    path: Vec<String>,
    message: String,
}

impl FieldError {
    fn new(message: impl Into<String>) -> FieldError {
        FieldError { path: Vec::new(), message: message.into() }
    }

    fn within(mut self, component: String) -> FieldError {
        if !component.is_empty() {
            self.path.push(component);
        }
        self
    }

    pub fn render(&self, scope: &str) -> String {
        let mut p = String::new();
        for c in self.path.iter().rev() {
            if !c.starts_with('[') && !p.is_empty() {
                p.push('.');
            }
            p.push_str(c);
        }
        if p.is_empty() {
            format!("{scope}: {}", self.message)
        } else {
            format!("{scope}: field `{p}`: {}", self.message)
        }
    }
}

type FResult<T = ()> = std::result::Result<T, FieldError>;

fn describe(v: &OwnedValue) -> String {
    match v {
        OwnedValue::U(u) => format!("the unsigned integer {u}"),
        OwnedValue::I(i) => format!("the signed integer {i}"),
        OwnedValue::F(f) => format!("the float {f}"),
        OwnedValue::Str(s) => format!("the string {s:?}"),
        OwnedValue::Bytes(b) => format!("{} bytes", b.len()),
        OwnedValue::Struct(m) => format!("a structure of {} members", m.len()),
        OwnedValue::Array(e) => format!("an array of {} elements", e.len()),
        OwnedValue::Variant(i, _) => format!("option {i} of a variant"),
    }
}

fn mismatch(expected: &str, got: &OwnedValue) -> FieldError {
    FieldError::new(format!("expected {expected}, got {}", describe(got)))
}

fn int_desc(i: &IntNode) -> String {
    format!("{} {}-bit integer", if i.signed { "a signed" } else { "an unsigned" }, i.size)
}

pub(super) fn mask(size: u32) -> u64 {
    if size >= 64 {
        u64::MAX
    } else {
        (1u64 << size) - 1
    }
}

/// Whether `v` is representable by an unsigned field of `size` bits.
pub(super) fn fits_unsigned(v: u64, size: u32) -> bool {
    size >= 64 || v >> size == 0
}

fn sign_extend(raw: u64, size: u32) -> i64 {
    if size >= 64 {
        raw as i64
    } else {
        let s = 64 - size;
        ((raw << s) as i64) >> s
    }
}

/// A field to patch when the packet closes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Patch {
    pub role: Role,
    pub bit: u64,
    pub size: u32,
    pub bo: ByteOrder,
}

/// Where to roll back to.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    pub bit: u64,
    byte: u8,
    clock: u64,
    last_bo: Option<ByteOrder>,
}

/// Encoding state: the packet buffer and what a reader would know at this point.
#[derive(Debug)]
pub(super) struct Enc {
    pub buf: BitWriter,
    slots: Vec<i128>,
    /// The clock value a reader has rebuilt at this point (cycles).
    pub clock: u64,
    /// Byte order of the last integer or float written.
    pub last_bo: Option<ByteOrder>,
    // Values of the fields the writer fills in.
    stream_id: u64,
    pub instance_id: u64,
    pub begin: u64,
    pub seq: u64,
    pub discarded: u64,
    pub ts: u64,
    pub class_id: u64,
    uuid: Option<[u8; 16]>,
    /// Values of the event header's `id` fields for the chosen encoding.
    pub ids: Vec<(NodeId, u64)>,
    /// The last event id written.
    pub last_id: Option<u64>,
    /// The raw `timestamp_begin` written in this packet.
    pub begin_written: Option<u64>,
    pub patches: Vec<Patch>,
}

impl Enc {
    pub fn new(plan: &WritePlan) -> Enc {
        Enc {
            buf: BitWriter::new(),
            slots: vec![0; plan.slot_count.max(1)],
            clock: 0,
            last_bo: None,
            stream_id: plan.stream_class_id,
            instance_id: 0,
            begin: 0,
            seq: 0,
            discarded: 0,
            ts: 0,
            class_id: 0,
            uuid: plan.uuid,
            ids: Vec::new(),
            last_id: None,
            begin_written: None,
            patches: Vec::new(),
        }
    }

    /// Goes on with `plan`, which keeps this stream's scopes but may have more event classes
    /// (and so more slots).
    pub fn follow(&mut self, plan: &WritePlan) {
        self.slots.resize(plan.slot_count.max(1), 0);
    }

    /// Where to roll back to.
    pub fn mark(&self) -> Mark {
        let bit = self.buf.position();
        Mark { bit, byte: self.buf.byte_at(bit), clock: self.clock, last_bo: self.last_bo }
    }

    /// Undoes what was written after `m`.
    pub fn rollback(&mut self, m: Mark) {
        self.buf.truncate(m.bit);
        if !m.bit.is_multiple_of(8) {
            self.buf.set_byte_at(m.bit, m.byte);
        }
        self.clock = m.clock;
        self.last_bo = m.last_bo;
    }

    fn check_bo(&self, bo: ByteOrder) -> FResult {
        match self.last_bo {
            Some(prev) if prev != bo && !self.buf.position().is_multiple_of(8) => Err(FieldError::new(format!(
                "a {} field starts in the middle of a byte after a {} field (at bit {}): readers cannot decode byte order changes within a byte",
                bo_word(bo),
                bo_word(prev),
                self.buf.position()
            ))),
            _ => Ok(()),
        }
    }

    /// Writes the members of the structure `root` with one optional value each.
    pub fn put_members(&mut self, plan: &WritePlan, root: NodeId, values: &[Option<OwnedValue>]) -> FResult {
        let node = plan.node(root);
        self.buf.align(node.align);
        if let NodeKind::Struct { fields } = &node.kind {
            for (k, &f) in fields.iter().enumerate() {
                let v = values.get(k).and_then(|v| v.as_ref());
                self.put(plan, f, v).map_err(|e| e.within(plan.node(f).raw_name.clone()))?;
            }
        }
        Ok(())
    }

    /// Writes the event header by the flattened `steps` of the chosen combo, no header value
    /// given: what [`Enc::put`] does for it, without walking the types. False (what was
    /// written is then garbage) where the general path would fail: the caller rolls back and
    /// takes it, which says why.
    pub fn put_header(&mut self, plan: &WritePlan, steps: &[Step]) -> bool {
        for s in steps {
            self.buf.align(s.align);
            if !s.int {
                continue;
            }
            let node = plan.node(s.node);
            let NodeKind::Int(i) = &node.kind else { return false };
            let raw = match node.role {
                Role::EventId => {
                    let x = self.ids.iter().find(|(n, _)| *n == s.node).map(|(_, x)| *x).unwrap_or(self.class_id);
                    if !fits_unsigned(x, i.size) {
                        return false;
                    }
                    self.last_id = Some(x);
                    x
                }
                Role::Timestamp => self.ts & mask(i.size),
                _ => 0,
            };
            if self.check_bo(i.byte_order).is_err() {
                return false;
            }
            self.buf.uint(raw, i.size, i.byte_order);
            self.last_bo = Some(i.byte_order);
            if let Some(slot) = i.slot {
                self.slots[slot as usize] = if i.signed { sign_extend(raw, i.size) as i128 } else { raw as i128 };
            }
            if i.clock.is_some() {
                self.clock = next_clock(self.clock, raw, i.size);
            }
        }
        true
    }

    /// Writes `v` for the node `id`, whose subtree is simple (see `WritePlan::simple`), a few
    /// instructions per field. False where a value is not the plain case (a wrong kind, an
    /// integer out of range, a NUL in a string, a length mismatch, ...): what was written is
    /// then garbage, and the caller rolls back and takes the general path, which says why.
    pub fn put_simple(&mut self, plan: &WritePlan, id: NodeId, v: Option<&OwnedValue>) -> bool {
        let node = plan.node(id);
        self.buf.align_bytes(node.align);
        match &node.kind {
            NodeKind::Int(i) => {
                let Ok(raw) = Self::int_value(i, v) else { return false };
                self.buf.push_uint(raw, (i.size / 8) as usize, i.byte_order);
                self.last_bo = Some(i.byte_order);
                if let Some(s) = i.slot {
                    self.slots[s as usize] = if i.signed { sign_extend(raw, i.size) as i128 } else { raw as i128 };
                }
                true
            }
            NodeKind::String => {
                let b: &[u8] = match v {
                    None => b"",
                    Some(OwnedValue::Str(s)) => s.as_bytes(),
                    Some(OwnedValue::Bytes(b)) => b,
                    Some(_) => return false,
                };
                if b.contains(&0) {
                    return false;
                }
                self.buf.push_bytes(b);
                self.buf.push_bytes(&[0]);
                true
            }
            NodeKind::Struct { fields } => match v {
                None => fields.iter().all(|&f| self.put_simple(plan, f, None)),
                Some(OwnedValue::Struct(vals)) if vals.len() == fields.len() => fields.iter().zip(vals).all(|(&f, x)| self.put_simple(plan, f, Some(x))),
                Some(_) => false,
            },
            NodeKind::Array { length, .. } => self.put_simple_bytes(*length, v, false),
            NodeKind::Sequence { length_slot, .. } => match u64::try_from(self.slots[*length_slot as usize]) {
                Ok(n) => self.put_simple_bytes(n, v, true),
                Err(_) => false,
            },
            NodeKind::Float { .. } | NodeKind::Variant { .. } | NodeKind::Invalid(_) | NodeKind::WideString(_) | NodeKind::Blob { .. } | NodeKind::Optional { .. } => false,
        }
    }

    /// [`Enc::put_simple`] for `n` plain bytes (an array, or a sequence when `seq`).
    fn put_simple_bytes(&mut self, n: u64, v: Option<&OwnedValue>, seq: bool) -> bool {
        let b: &[u8] = match v {
            None => b"",
            Some(OwnedValue::Bytes(b)) if b.len() as u64 == n => b,
            Some(OwnedValue::Str(s)) if s.len() as u64 == n || (!seq && (s.len() as u64) < n) => s.as_bytes(),
            Some(_) => return false,
        };
        let Ok(n) = usize::try_from(n) else { return false };
        self.buf.push_bytes(b);
        self.buf.push_zeros(n - b.len());
        true
    }

    pub fn put(&mut self, plan: &WritePlan, id: NodeId, v: Option<&OwnedValue>) -> FResult {
        let node = plan.node(id);
        self.buf.align(node.align);
        match &node.kind {
            NodeKind::Int(i) => self.put_int(id, node.role, i, v),
            NodeKind::Float { size, byte_order: bo } => {
                let x = match v {
                    None => 0.0,
                    Some(OwnedValue::F(x)) => *x,
                    Some(o) => return Err(mismatch(&format!("a {size}-bit float"), o)),
                };
                let raw = if *size == 32 { (x as f32).to_bits() as u64 } else { x.to_bits() };
                self.check_bo(*bo)?;
                self.buf.uint(raw, *size, *bo);
                self.last_bo = Some(*bo);
                Ok(())
            }
            NodeKind::String => {
                let b: &[u8] = match v {
                    None => b"",
                    Some(OwnedValue::Str(s)) => s.as_bytes(),
                    Some(OwnedValue::Bytes(b)) => b,
                    Some(o) => return Err(mismatch("a string", o)),
                };
                if let Some(at) = b.iter().position(|&c| c == 0) {
                    return Err(FieldError::new(format!("a string cannot hold a NUL byte (byte {at})")));
                }
                self.buf.string(b);
                Ok(())
            }
            NodeKind::Struct { fields } => match v {
                None => {
                    for &f in fields {
                        self.put(plan, f, None).map_err(|e| e.within(plan.node(f).raw_name.clone()))?;
                    }
                    Ok(())
                }
                Some(OwnedValue::Struct(vals)) if vals.len() == fields.len() => {
                    for (&f, x) in fields.iter().zip(vals) {
                        self.put(plan, f, Some(x)).map_err(|e| e.within(plan.node(f).raw_name.clone()))?;
                    }
                    Ok(())
                }
                Some(OwnedValue::Struct(vals)) => Err(FieldError::new(format!(
                    "the structure has {} members, but {} values were given",
                    fields.len(),
                    vals.len()
                ))),
                Some(o) => Err(mismatch(&format!("a structure of {} members", fields.len()), o)),
            },
            NodeKind::Variant { options, tag_slot, ranges, tag, .. } => {
                let t = self.slots[*tag_slot as usize];
                let selected = ranges.iter().find(|r| r.lower <= t && t <= r.upper).map(|r| r.option);
                let option_name = |i: u32| options.get(i as usize).map(|&o| plan.node(o).raw_name.as_str()).unwrap_or("?");
                let (index, inner) = match v {
                    None => match selected {
                        Some(i) => (i, None),
                        None => return Err(FieldError::new(format!("the variant's tag `{tag}` is {t}, which selects no option"))),
                    },
                    Some(OwnedValue::Variant(i, inner)) => {
                        if *i as usize >= options.len() {
                            return Err(FieldError::new(format!("option {i} given, but the variant has {} options", options.len())));
                        }
                        if selected != Some(*i) {
                            let sel = match selected {
                                Some(s) => format!("option `{}`", option_name(s)),
                                None => "no option".to_string(),
                            };
                            return Err(FieldError::new(format!(
                                "option `{}` given, but the variant's tag `{tag}` is {t}, which selects {sel}",
                                option_name(*i)
                            )));
                        }
                        (*i, Some(&**inner))
                    }
                    Some(o) => return Err(mismatch("a variant", o)),
                };
                let o = options[index as usize];
                self.put(plan, o, inner).map_err(|e| e.within(plan.node(o).raw_name.clone()))
            }
            NodeKind::Array { element, length, .. } => {
                if node.role == Role::Uuid {
                    if let Some(u) = self.uuid {
                        return self.put_bytes(plan, *element, &u, 16);
                    }
                }
                self.put_elems(plan, *element, *length, v, None)
            }
            NodeKind::Sequence { element, length_slot, length, .. } => {
                let n = self.slots[*length_slot as usize];
                let n = u64::try_from(n)
                    .map_err(|_| FieldError::new(format!("the sequence's length field `{length}` is negative ({n})")))?;
                self.put_elems(plan, *element, n, v, Some(length))
            }
            NodeKind::WideString(e) => {
                let unit = e.unit();
                let b: Vec<u8> = match v {
                    None => Vec::new(),
                    Some(OwnedValue::Bytes(b)) => b.clone(),
                    Some(OwnedValue::Str(s)) => encode_units(s, *e),
                    Some(o) => return Err(mismatch("a string", o)),
                };
                if !b.len().is_multiple_of(unit) {
                    return Err(FieldError::new(format!("{} bytes are not whole {unit}-byte code units", b.len())));
                }
                if let Some(k) = b.chunks_exact(unit).position(|c| c.iter().all(|&x| x == 0)) {
                    return Err(FieldError::new(format!("a string cannot hold a NUL code unit (unit {k})")));
                }
                self.buf.bytes_aligned(&b);
                self.buf.push_zeros(unit);
                Ok(())
            }
            NodeKind::Blob { length, length_slot, length_path } => {
                if node.role == Role::Uuid {
                    if let Some(u) = self.uuid.filter(|_| *length == Some(16)) {
                        self.buf.bytes_aligned(&u);
                        return Ok(());
                    }
                }
                let n = match length {
                    Some(n) => *n,
                    None => {
                        let n = self.slots[*length_slot as usize];
                        u64::try_from(n).map_err(|_| FieldError::new(format!("the BLOB's length field `{length_path}` is negative ({n})")))?
                    }
                };
                match v {
                    None => {
                        let n = usize::try_from(n).map_err(|_| FieldError::new("BLOB too long"))?;
                        self.buf.push_zeros(n);
                    }
                    Some(OwnedValue::Bytes(b)) if b.len() as u64 == n => self.buf.bytes_aligned(b),
                    Some(OwnedValue::Bytes(b)) => return Err(FieldError::new(format!("the BLOB has {n} bytes, but {} were given", b.len()))),
                    Some(o) => return Err(mismatch(&format!("{n} bytes (a BLOB)"), o)),
                }
                Ok(())
            }
            NodeKind::Optional { inner, selector_slot, ranges, selector } => {
                let sel = self.slots[*selector_slot as usize];
                let present = match ranges {
                    None => sel != 0,
                    Some(r) => r.iter().any(|&(lo, hi)| lo <= sel && sel <= hi),
                };
                let given = match v {
                    None => None,
                    Some(OwnedValue::Array(vals)) if vals.len() <= 1 => Some(vals.first()),
                    Some(o) => return Err(mismatch("an optional (an array of 0 or 1 value)", o)),
                };
                match (present, given) {
                    (true, Some(None)) | (false, Some(Some(_))) => Err(FieldError::new(format!(
                        "the optional's selector `{selector}` is {sel}, which makes it {}",
                        if present { "present, but no value was given" } else { "absent, but a value was given" }
                    ))),
                    (true, g) => self.put(plan, *inner, g.flatten()),
                    (false, _) => Ok(()),
                }
            }
            NodeKind::Invalid(m) => Err(FieldError::new(format!("the metadata cannot be encoded here: {m}"))),
        }
    }

    fn put_elems(&mut self, plan: &WritePlan, elem: NodeId, n: u64, v: Option<&OwnedValue>, seq: Option<&str>) -> FResult {
        let byte_elem = plan.node(elem).is_byte();
        let count_error = |given: usize| match seq {
            Some(length) => FieldError::new(format!("the sequence has {given} elements, but its length field `{length}` is {n}")),
            None => FieldError::new(format!("the array has {n} elements, but {given} were given")),
        };
        match v {
            None => {
                for k in 0..n {
                    self.put(plan, elem, None).map_err(|e| e.within(format!("[{k}]")))?;
                }
                Ok(())
            }
            Some(OwnedValue::Array(vals)) => {
                if vals.len() as u64 != n {
                    return Err(count_error(vals.len()));
                }
                for (k, x) in vals.iter().enumerate() {
                    self.put(plan, elem, Some(x)).map_err(|e| e.within(format!("[{k}]")))?;
                }
                Ok(())
            }
            Some(OwnedValue::Bytes(b)) if byte_elem => {
                if b.len() as u64 != n {
                    return Err(count_error(b.len()));
                }
                self.put_bytes(plan, elem, b, n)
            }
            Some(OwnedValue::Str(s)) if byte_elem => {
                let b = s.as_bytes();
                if b.len() as u64 > n || (seq.is_some() && b.len() as u64 != n) {
                    return Err(match seq {
                        Some(length) => FieldError::new(format!("the string has {} bytes, but the sequence's length field `{length}` is {n}", b.len())),
                        None => FieldError::new(format!("the string has {} bytes, more than the array's {n}", b.len())),
                    });
                }
                self.put_bytes(plan, elem, b, n)
            }
            Some(o) => Err(mismatch(&format!("an array of {n} elements"), o)),
        }
    }

    /// Writes `b` then NUL bytes up to `n` elements of the 8-bit integer node `elem`.
    fn put_bytes(&mut self, plan: &WritePlan, elem: NodeId, b: &[u8], n: u64) -> FResult {
        let node = plan.node(elem);
        let NodeKind::Int(i) = &node.kind else { return Err(FieldError::new("internal error: not a byte array")) };
        let plain = node.align <= 8 && i.slot.is_none() && i.clock.is_none() && node.role == Role::None;
        if plain {
            self.buf.align(node.align);
            if self.buf.position().is_multiple_of(8) {
                self.buf.bytes_aligned(b);
                for _ in b.len() as u64..n {
                    self.buf.uint(0, 8, i.byte_order);
                }
                return Ok(());
            }
        }
        for k in 0..n {
            let x = b.get(k as usize).copied().unwrap_or(0);
            let v = if i.signed { OwnedValue::I(x as i8 as i64) } else { OwnedValue::U(x as u64) };
            self.put(plan, elem, Some(&v)).map_err(|e| e.within(format!("[{k}]")))?;
        }
        Ok(())
    }

    fn int_value(i: &IntNode, v: Option<&OwnedValue>) -> FResult<u64> {
        let size = i.size;
        match v {
            None => Ok(0),
            Some(&OwnedValue::U(u)) => {
                let ok = if i.signed { size >= 64 && u <= i64::MAX as u64 || size < 64 && u < 1u64 << (size - 1) } else { fits_unsigned(u, size) };
                if !ok {
                    return Err(FieldError::new(format!("{u} does not fit {}", int_desc(i))));
                }
                Ok(u & mask(size))
            }
            Some(&OwnedValue::I(x)) => {
                let ok = if i.signed {
                    size >= 64 || (-(1i64 << (size - 1))..(1i64 << (size - 1))).contains(&x)
                } else {
                    x >= 0 && fits_unsigned(x as u64, size)
                };
                if !ok {
                    return Err(FieldError::new(format!("{x} does not fit {}", int_desc(i))));
                }
                Ok(x as u64 & mask(size))
            }
            Some(o) => Err(mismatch(&int_desc(i), o)),
        }
    }

    fn put_int(&mut self, id: NodeId, role: Role, i: &IntNode, v: Option<&OwnedValue>) -> FResult {
        if i.varlen {
            return self.put_varint(id, role, i, v);
        }
        let size = i.size;
        if size > 64 {
            if !size.is_multiple_of(8) || !self.buf.position().is_multiple_of(8) {
                return Err(FieldError::new(format!("a {size}-bit integer must be byte-aligned and a whole number of bytes")));
            }
            let n = (size / 8) as usize;
            match v {
                None => {
                    for _ in 0..n {
                        self.buf.uint(0, 8, i.byte_order);
                    }
                }
                Some(OwnedValue::Bytes(b)) if b.len() == n => self.buf.bytes_aligned(b),
                Some(o) => return Err(mismatch(&format!("{n} bytes (a {size}-bit integer)"), o)),
            }
            self.last_bo = Some(i.byte_order);
            return Ok(());
        }
        let need = |what: &str, value: u64| -> FResult<u64> {
            if fits_unsigned(value, size) {
                Ok(value)
            } else {
                Err(FieldError::new(format!("{what} {value} does not fit this {size}-bit field")))
            }
        };
        let raw = match role {
            Role::None | Role::Uuid => Self::int_value(i, v)?,
            Role::Magic => need("the packet magic", PACKET_MAGIC)?,
            Role::StreamId => need("the stream class id", self.stream_id)?,
            Role::StreamInstanceId => need("the stream instance id", self.instance_id)?,
            Role::PacketBegin => {
                let b = self.begin & mask(size);
                self.begin_written = Some(b);
                b
            }
            Role::PacketEnd | Role::ContentSize | Role::PacketSize => {
                self.patches.push(Patch { role, bit: self.buf.position(), size, bo: i.byte_order });
                0
            }
            Role::EventsDiscarded => self.discarded & mask(size),
            Role::PacketSeqNum => self.seq & mask(size),
            Role::EventId => {
                let x = self.ids.iter().find(|(n, _)| *n == id).map(|(_, x)| *x).unwrap_or(self.class_id);
                let x = need("the event class id", x)?;
                self.last_id = Some(x);
                x
            }
            Role::Timestamp => self.ts & mask(size),
        };
        self.check_bo(i.byte_order)?;
        let stored = if i.reversed { raw.reverse_bits() >> (64 - size) } else { raw };
        self.buf.uint(stored, size, i.byte_order);
        self.last_bo = Some(i.byte_order);
        if let Some(s) = i.slot {
            self.slots[s as usize] = if i.signed { sign_extend(raw, size) as i128 } else { raw as i128 };
        }
        if i.clock.is_some() && role != Role::PacketEnd {
            self.clock = next_clock(self.clock, raw, size);
        }
        Ok(())
    }

    /// A variable-length (LEB128) integer: as few bytes as its value needs.
    fn put_varint(&mut self, id: NodeId, role: Role, i: &IntNode, v: Option<&OwnedValue>) -> FResult {
        let raw = match role {
            Role::None | Role::Uuid => match (v, i.signed) {
                (None, _) => 0,
                (Some(&OwnedValue::U(u)), false) => u,
                (Some(&OwnedValue::I(x)), false) if x >= 0 => x as u64,
                (Some(&OwnedValue::I(x)), true) => x as u64,
                (Some(&OwnedValue::U(u)), true) if u <= i64::MAX as u64 => u,
                (Some(o), _) => return Err(mismatch(&format!("{} variable-length integer", if i.signed { "a signed" } else { "an unsigned" }), o)),
            },
            Role::StreamId => self.stream_id,
            Role::StreamInstanceId => self.instance_id,
            Role::EventsDiscarded => self.discarded,
            Role::PacketSeqNum => self.seq,
            Role::Timestamp => self.ts,
            Role::PacketBegin => {
                self.begin_written = Some(self.begin);
                self.begin
            }
            Role::EventId => {
                let x = self.ids.iter().find(|(n, _)| *n == id).map(|(_, x)| *x).unwrap_or(self.class_id);
                self.last_id = Some(x);
                x
            }
            Role::Magic => PACKET_MAGIC,
            Role::PacketEnd | Role::ContentSize | Role::PacketSize => {
                return Err(FieldError::new("the writer cannot patch a variable-length packet size or end time"));
            }
        };
        let mut bytes = [0u8; 10];
        let mut n = 0;
        let mut x = raw;
        loop {
            let b = (x & 0x7f) as u8;
            x = if i.signed { ((x as i64) >> 7) as u64 } else { x >> 7 };
            let done = if i.signed { (x == 0 && b & 0x40 == 0) || (x == u64::MAX && b & 0x40 != 0) } else { x == 0 };
            bytes[n] = if done { b } else { b | 0x80 };
            n += 1;
            if done || n == 10 {
                break;
            }
        }
        self.buf.bytes_aligned(&bytes[..n]);
        if let Some(s) = i.slot {
            self.slots[s as usize] = if i.signed { raw as i64 as i128 } else { raw as i128 };
        }
        if i.clock.is_some() {
            self.clock = next_clock(self.clock, raw, (7 * n as u32).min(64));
        }
        Ok(())
    }
}

/// Why an event could not be encoded.
pub(super) enum EventError {
    /// The timestamp cannot be encoded in this packet (a new packet may help).
    Time(String),
    Other(String),
}

/// `s` in the code units of `e` (UTF-16 or UTF-32, either byte order).
fn encode_units(s: &str, e: crate::ir::Encoding) -> Vec<u8> {
    use crate::ir::Encoding;
    match e {
        Encoding::Utf16Be => s.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        Encoding::Utf16Le => s.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        Encoding::Utf32Be => s.chars().flat_map(|c| (c as u32).to_be_bytes()).collect(),
        Encoding::Utf32Le => s.chars().flat_map(|c| (c as u32).to_le_bytes()).collect(),
        _ => s.as_bytes().to_vec(),
    }
}

fn bo_word(bo: ByteOrder) -> &'static str {
    match bo {
        ByteOrder::Little => "little-endian",
        ByteOrder::Big => "big-endian",
    }
}

