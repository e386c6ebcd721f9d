//! Ranking of workspace paths against what the user typed after `@`.
//!
//! Case-insensitive (ASCII). Better kinds of match always rank first: the
//! file name equal to the query, then the file name starting with it, the
//! path starting with it, the file name containing it, the path containing
//! it, and last the query's characters in order anywhere in the path
//! (`mrs` finds `src/main.rs`). Within a kind, shorter paths come first.

/// Score of `path` for `query`, higher is better; `None` when it does not
/// match at all. `query` must already be ASCII-lowercased.
pub(crate) fn score(path: &str, query: &str) -> Option<u32> {
    if query.is_empty() {
        return Some(0);
    }
    let p = path.as_bytes();
    let q = query.as_bytes();
    let base_start = path.rfind('/').map_or(0, |i| i + 1);
    let base = &p[base_start..];
    if eq_nocase(base, q) {
        return Some(6000);
    }
    if starts_nocase(base, q) {
        return Some(5000);
    }
    if starts_nocase(p, q) {
        return Some(4000);
    }
    if find_nocase(base, q).is_some() {
        return Some(3000);
    }
    if let Some(at) = find_nocase(p, q) {
        // A match that starts a path segment (`src/app` for `app`) is
        // likelier to be what was meant than one inside a word.
        let boundary = at == 0 || is_separator(p[at - 1]);
        return Some(if boundary { 2500 } else { 2000 });
    }
    fuzzy(p, q)
}

fn is_separator(b: u8) -> bool {
    matches!(b, b'/' | b'_' | b'-' | b'.' | b' ')
}

fn eq_nocase(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_ascii_lowercase() == *y)
}

fn starts_nocase(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && eq_nocase(&hay[..needle.len()], needle)
}

fn find_nocase(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| eq_nocase(&hay[i..i + needle.len()], needle))
}

/// The query's bytes in order anywhere in the path: 1..=1999, more for
/// matches at segment starts and in runs, less for gaps.
fn fuzzy(p: &[u8], q: &[u8]) -> Option<u32> {
    let mut score: i64 = 1000;
    let mut qi = 0;
    let mut last: Option<usize> = None;
    for (i, &b) in p.iter().enumerate() {
        if qi == q.len() {
            break;
        }
        if b.to_ascii_lowercase() != q[qi] {
            continue;
        }
        if i == 0 || is_separator(p[i - 1]) {
            score += 60;
        }
        match last {
            Some(l) if l + 1 == i => score += 40,
            Some(l) => score -= ((i - l - 1) as i64).min(30),
            None => score -= (i as i64).min(30),
        }
        last = Some(i);
        qi += 1;
    }
    if qi < q.len() {
        return None;
    }
    Some(score.clamp(1, 1999) as u32)
}

/// The best `limit` of `paths` for `query`, best first.
pub(crate) fn best<'a>(
    paths: impl Iterator<Item = &'a str>,
    query: &str,
    limit: usize,
) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    let query = query.trim().to_ascii_lowercase();
    let mut hits: Vec<(u32, &str)> = paths
        .filter_map(|p| score(p, &query).map(|s| (s, p)))
        .collect();
    let order = |a: &(u32, &str), b: &(u32, &str)| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    };
    if hits.len() > limit {
        hits.select_nth_unstable_by(limit - 1, order);
        hits.truncate(limit);
    }
    hits.sort_unstable_by(order);
    hits.into_iter().map(|(_, p)| p.to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(paths: &[&str], query: &str) -> Vec<String> {
        best(paths.iter().copied(), query, 10)
    }

    #[test]
    fn file_name_matches_beat_path_matches() {
        let paths = [
            "docs/main/notes.md",
            "src/domain.rs",
            "src/main.rs",
            "main.rs.bak/x",
            "tests/main_test.rs",
        ];
        assert_eq!(
            rank(&paths, "main.rs"),
            vec![
                "src/main.rs",        // the file name itself
                "main.rs.bak/x",      // the path starts with it
                "src/domain.rs",      // the file name contains it
                "tests/main_test.rs", // its characters in order
            ]
        );
        // Name prefix (shorter first), path prefix, name substring, a
        // substring that starts a segment.
        let got = rank(&paths, "main");
        assert_eq!(
            got,
            vec![
                "src/main.rs",
                "tests/main_test.rs",
                "main.rs.bak/x",
                "src/domain.rs",
                "docs/main/notes.md"
            ]
        );
    }

    #[test]
    fn fuzzy_matches_come_last_and_need_every_character_in_order() {
        let paths = ["src/main.rs", "README.md", "src/mars/rover.rs"];
        let got = rank(&paths, "smrs");
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.contains(&"src/main.rs".to_owned()));
        assert!(rank(&paths, "zzz").is_empty());
        assert!(rank(&paths, "srm").iter().all(|p| p.starts_with("src/")));
    }

    #[test]
    fn matching_ignores_ascii_case_and_ties_prefer_short_paths() {
        let paths = ["a/b/c/readme.md", "README.md", "x/ReadMe.MD"];
        assert_eq!(
            rank(&paths, "readme.md"),
            vec!["README.md", "x/ReadMe.MD", "a/b/c/readme.md"]
        );
    }

    #[test]
    fn the_limit_keeps_the_best() {
        let paths: Vec<String> = (0..100).map(|i| format!("dir{i}/file{i}.txt")).collect();
        let got = best(
            paths.iter().map(String::as_str).chain(["file.txt"]),
            "file.txt",
            3,
        );
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], "file.txt");
        let empty = best(paths.iter().map(String::as_str), "", 5);
        assert_eq!(empty.len(), 5, "an empty query lists some files");
        assert!(best(paths.iter().map(String::as_str), "x", 0).is_empty());
    }
}
