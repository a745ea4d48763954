#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ctf::fuzz_entry::metadata(data));
