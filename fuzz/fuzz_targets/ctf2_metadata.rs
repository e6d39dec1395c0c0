//! Fuzzes the CTF 2 metadata reader: a JSON text sequence (a record separator is put first
//! when the input has none) to a trace class; what parses is written back as CTF 2 by the
//! writer, which must parse again to the same class.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    if data.first() != Some(&0x1E) {
        bytes.push(0x1E);
    }
    bytes.extend_from_slice(data);
    let Ok(class) = tracelens_ctf::parse_metadata(&bytes) else { return };
    if let Ok(text) = tracelens_ctf::write::to_ctf2(&class) {
        let again = tracelens_ctf::parse_ctf2(&text).expect("the CTF 2 metadata written parses back");
        let text2 = tracelens_ctf::write::to_ctf2(&again).expect("a class parsed back writes again");
        assert_eq!(tracelens_ctf::parse_ctf2(&text2).ok().as_ref(), Some(&again), "a second round trip changes the class");
    }
});
