// A field's type must be one the trace can carry (FieldValue): integers,
// floats, bool, &str, &[u8]. An owned String is refused where it is
// written, not at run time.
fn main() {
    let path = String::from("/index");
    ringtrace_core::event!(ui, request, path: String = path);
}
