#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringtrace::fuzz::ctl_request(data));
