#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringtrace::recover::fuzz_buffer_file(data));
