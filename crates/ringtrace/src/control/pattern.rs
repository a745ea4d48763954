//! Event-name patterns: `provider:event` where `*` matches any run of
//! characters (`myapp:*`, `*:request_*`, `*`).

/// Whether `name` matches `pattern` (`*` matches any sequence, including an
/// empty one; every other character matches itself).
pub fn matches(pattern: &str, name: &str) -> bool {
    matches_bytes(pattern.as_bytes(), name.as_bytes())
}

/// [`matches`] on bytes (text that may not be UTF-8).
pub fn matches_bytes(p: &[u8], n: &[u8]) -> bool {
    ringtrace_core::filter::glob_by(p, |i| p[i] == b'*', n)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards() {
        assert!(matches("*", "myapp:request"));
        assert!(matches("myapp:*", "myapp:request"));
        assert!(!matches("myapp:*", "other:request"));
        assert!(matches("*:request_*", "a:request_begin"));
        assert!(matches("my*app:*end", "my_big_app:request_end"));
        assert!(!matches("my*app:*end", "my_big_app:request_end2"));
        assert!(matches("myapp:exact", "myapp:exact"));
        assert!(!matches("myapp:exact", "myapp:exactly"));
        assert!(matches("**", ""));
        assert!(!matches("a", ""));
    }
}
