//! What the ring buffer's types refuse, as compile errors: a second
//! reader of a buffer while the first lives.

#[test]
fn misuse_of_the_read_side_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
