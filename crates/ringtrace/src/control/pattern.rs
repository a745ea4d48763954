//! Event-name patterns: `provider:event` where `*` matches any run of
//! characters (`myapp:*`, `*:request_*`, `*`).

/// Whether `name` matches `pattern` (`*` matches any sequence, including an
/// empty one; every other character matches itself).
pub fn matches(pattern: &str, name: &str) -> bool {
    matches_bytes(pattern.as_bytes(), name.as_bytes())
}

/// [`matches`] on bytes (text that may not be UTF-8).
pub fn matches_bytes(p: &[u8], n: &[u8]) -> bool {
    // Greedy match with backtracking to the last star: O(|p| * |n|) worst case.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == n[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == b'*')
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
