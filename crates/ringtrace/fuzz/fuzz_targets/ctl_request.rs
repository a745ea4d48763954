#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringtrace::ctl::proto::fuzz_request(data));
