//! What a library that records events may not write, as compile errors:
//! naming the collector from the call site's crate (the dependency goes
//! one way), and a field of a type the trace cannot carry.

#[test]
fn misuse_of_the_call_sites_crate_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
