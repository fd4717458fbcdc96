//! Key rules and canonical keys: how an entry is named.
//!
//! A key rule says that the arrays at a path hold one entry per element, identified by a
//! field of the element (`/hooks/*=matcher`), by the element itself (`/permissions/allow=.`),
//! optionally normalized as a command line with paths (`=command:path`). A canonical key names
//! one entry: object keys as JSON Pointer segments, keyed elements as `[field=key]`, e.g.
//! `/hooks/SessionStart[matcher=startup]/hooks[command=node /home/u/z/h.js]`.

use std::collections::HashMap;

use super::error::EntryError;
use super::value::Json;

/// One step of a path: an object member, or the element of a keyed array with that key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    Key(String),
    Elem { field: String, key: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pat {
    Any,
    Lit(String),
}

/// Which part of an element identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Field {
    /// The element itself (set semantics).
    Itself,
    /// A member of the (object) element.
    Member(String),
}

/// One key rule: `PATTERN=FIELD[:path]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRule {
    pattern: Vec<Pat>,
    pub(crate) field: Field,
    pub(crate) path: bool,
}

impl KeyRule {
    /// Reads a rule from its pattern (`/hooks/*/*/hooks`) and field (`command:path`, `.`).
    ///
    /// # Errors
    /// [`EntryError::BadKeyRule`] when the pattern does not start with `/` or the field is empty.
    pub fn new(pattern: &str, field: &str) -> Result<KeyRule, EntryError> {
        let rule = format!("{pattern}={field}");
        let bad = |reason| EntryError::BadKeyRule {
            rule: rule.clone(),
            reason,
        };
        let Some(rest) = pattern.strip_prefix('/') else {
            return Err(bad("the path must start with `/`"));
        };
        let pattern = rest
            .split('/')
            .map(|s| {
                if s == "*" {
                    Pat::Any
                } else {
                    Pat::Lit(unescape_pointer(s))
                }
            })
            .collect();
        let (name, path) = match field.strip_suffix(":path") {
            Some(n) => (n, true),
            None => (field, false),
        };
        let field = match name {
            "" => return Err(bad("the field is empty (use `.` for the element itself)")),
            "." => Field::Itself,
            n => Field::Member(n.to_owned()),
        };
        Ok(KeyRule {
            pattern,
            field,
            path,
        })
    }

    /// Reads `PATTERN=FIELD` (split at the last `=`).
    ///
    /// # Errors
    /// [`EntryError::BadKeyRule`] when there is no `=` or a part is malformed.
    pub fn parse(spec: &str) -> Result<KeyRule, EntryError> {
        match spec.rsplit_once('=') {
            Some((p, f)) => KeyRule::new(p, f),
            None => Err(EntryError::BadKeyRule {
                rule: spec.to_owned(),
                reason: "expected PATH=FIELD, e.g. /hooks/*=matcher",
            }),
        }
    }

    /// The rule of an array no rule names: a set of whole values (`[.=…]`).
    pub(crate) fn whole_values() -> KeyRule {
        KeyRule {
            pattern: Vec::new(),
            field: Field::Itself,
            path: false,
        }
    }

    pub(crate) fn field_name(&self) -> &str {
        match &self.field {
            Field::Itself => ".",
            Field::Member(n) => n,
        }
    }

    fn matches(&self, path: &[Seg]) -> bool {
        self.pattern.len() == path.len()
            && self.pattern.iter().zip(path).all(|(p, s)| match (p, s) {
                (Pat::Any, _) => true,
                (Pat::Lit(l), Seg::Key(k)) => l == k,
                (Pat::Lit(_), Seg::Elem { .. }) => false,
            })
    }

    fn matches_prefix(&self, path: &[Seg]) -> bool {
        self.pattern.len() > path.len()
            && self.pattern.iter().zip(path).all(|(p, s)| match (p, s) {
                (Pat::Any, _) => true,
                (Pat::Lit(l), Seg::Key(k)) => l == k,
                (Pat::Lit(_), Seg::Elem { .. }) => false,
            })
    }
}

/// The key rules of one target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRules {
    rules: Vec<KeyRule>,
}

impl KeyRules {
    /// No rules: every array is one value.
    #[must_use]
    pub fn new() -> KeyRules {
        KeyRules::default()
    }

    /// Rules from `PATTERN=FIELD` strings.
    ///
    /// # Errors
    /// The first malformed rule.
    pub fn parse<S: AsRef<str>>(specs: &[S]) -> Result<KeyRules, EntryError> {
        let rules = specs
            .iter()
            .map(|s| KeyRule::parse(s.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(KeyRules { rules })
    }

    /// Adds a rule; a later rule for the same pattern wins.
    pub fn push(&mut self, rule: KeyRule) {
        self.rules.retain(|r| r.pattern != rule.pattern);
        self.rules.push(rule);
    }

    /// True when there are no rules.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rule for the array at `path`.
    pub(crate) fn rule_for(&self, path: &[Seg]) -> Option<&KeyRule> {
        self.rules.iter().rev().find(|r| r.matches(path))
    }

    /// The rule for the array at `path`, or the set of whole values when none names it.
    pub(crate) fn array_rule(&self, path: &[Seg]) -> KeyRule {
        self.rule_for(path)
            .cloned()
            .unwrap_or_else(KeyRule::whole_values)
    }

    /// True when some rule applies strictly below `path`.
    pub(crate) fn any_below(&self, path: &[Seg]) -> bool {
        self.rules.iter().any(|r| r.matches_prefix(path))
    }
}

/// Resolves an existing absolute path through symlinks; `None` when it does not exist.
pub type Resolver<'a> = &'a dyn Fn(&str) -> Option<String>;

/// How `:path` fields are normalized: the home directory and a symlink resolver.
///
/// A key has two forms. The **stable** form is the one registered: the path words with `~/`,
/// `$HOME/` or `${HOME}/` expanded and their quotes dropped, nothing resolved, so it does not
/// depend on the file system at run time (a symlink re-pointed by an upgrade, scripts deleted
/// before an uninstall). The **resolved** form also resolves the path words through symlinks
/// where they exist; elements are matched by either form. Words that are not paths are kept
/// exactly as written (quotes included): `echo 'a b'` and `echo a b` are two keys.
pub(crate) struct PathNorm<'a> {
    pub(crate) home: Option<&'a str>,
    pub(crate) resolve: Option<Resolver<'a>>,
    /// The home directory through its symlinks, when that differs (`$HOME` a symlink): a
    /// path under it is written under the home directory in the stable form.
    real_home: Option<String>,
    stable: HashMap<String, String>,
    resolved: HashMap<String, String>,
}

impl<'a> PathNorm<'a> {
    pub(crate) fn new(home: Option<&'a str>, resolve: Option<Resolver<'a>>) -> PathNorm<'a> {
        let home = home
            .map(|h| h.trim_end_matches('/'))
            .filter(|h| !h.is_empty());
        let real_home = match (home, resolve) {
            (Some(h), Some(r)) => r(h).filter(|real| real.trim_end_matches('/') != h),
            _ => None,
        };
        PathNorm {
            home,
            resolve,
            real_home: real_home.map(|r| r.trim_end_matches('/').to_owned()),
            stable: HashMap::new(),
            resolved: HashMap::new(),
        }
    }

    /// The (stable) key of an element under `rule`.
    pub(crate) fn element_key(&mut self, rule: &KeyRule, field_value: Option<&Json>) -> String {
        let raw = match field_value {
            None => return String::new(),
            Some(Json::Str(s)) => s.clone(),
            Some(other) => other.canonical(),
        };
        if rule.path { self.normalize(&raw) } else { raw }
    }

    /// The stable form of a command line: path words expanded and unquoted, other words as
    /// written, words joined by one space.
    pub(crate) fn normalize(&mut self, text: &str) -> String {
        if let Some(hit) = self.stable.get(text) {
            return hit.clone();
        }
        let mut out = String::with_capacity(text.len());
        for word in words(text) {
            if !out.is_empty() {
                out.push(' ');
            }
            match self.path_word(word) {
                Some(path) => out.push_str(&path),
                None => out.push_str(word),
            }
        }
        self.stable.insert(text.to_owned(), out.clone());
        out
    }

    /// The resolved form of a stable key: each path word resolved through symlinks where it
    /// exists.
    pub(crate) fn resolved(&mut self, stable: &str) -> String {
        if let Some(hit) = self.resolved.get(stable) {
            return hit.clone();
        }
        let mut out = String::with_capacity(stable.len());
        for word in words(stable) {
            if !out.is_empty() {
                out.push(' ');
            }
            let real = word
                .starts_with('/')
                .then(|| self.resolve.and_then(|r| r(word)))
                .flatten();
            out.push_str(real.as_deref().unwrap_or(word));
        }
        self.resolved.insert(stable.to_owned(), out.clone());
        out
    }

    /// A word that is a path (after its quotes: `~/`, `$HOME/`, `${HOME}/` or `/`), in its
    /// stable form; `None` for any other word.
    fn path_word(&self, word: &str) -> Option<String> {
        let unquoted = strip_quotes(word);
        let expanded = match self.home {
            Some(home) => expand_home(unquoted, home),
            None => unquoted.to_owned(),
        };
        if !expanded.starts_with('/') {
            return None;
        }
        if let (Some(real), Some(home)) = (&self.real_home, self.home)
            && let Some(rest) = expanded.strip_prefix(real.as_str())
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(format!("{home}{rest}"));
        }
        Some(expanded)
    }
}

/// Splits at whitespace outside single or double quotes.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c.is_whitespace() => {
                if let Some(s) = start.take() {
                    out.push(&text[s..i]);
                }
            }
            None => {
                if start.is_none() {
                    start = Some(i);
                }
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
            }
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

fn strip_quotes(w: &str) -> &str {
    for q in ['"', '\''] {
        if w.len() >= 2 && w.starts_with(q) && w.ends_with(q) {
            return &w[1..w.len() - 1];
        }
    }
    w
}

fn expand_home(w: &str, home: &str) -> String {
    let home = home.trim_end_matches('/');
    for prefix in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = w.strip_prefix(prefix) {
            return format!("{home}/{rest}");
        }
    }
    w.to_owned()
}

fn escape_segment(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            '[' => out.push_str("~2"),
            _ => out.push(c),
        }
    }
}

fn unescape_pointer(s: &str) -> String {
    s.replace("~2", "[").replace("~1", "/").replace("~0", "~")
}

/// The canonical key of a path.
pub(crate) fn format_key(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                out.push('/');
                escape_segment(k, &mut out);
            }
            Seg::Elem { field, key } => {
                out.push('[');
                out.push_str(field);
                out.push('=');
                for c in key.chars() {
                    if c == ']' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push(']');
            }
        }
    }
    out
}

/// Reads a canonical key back into its path; `None` when it is malformed.
pub(crate) fn parse_key(key: &str) -> Option<Vec<Seg>> {
    let mut out = Vec::new();
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' => {
                let mut seg = String::new();
                while let Some(&n) = chars.peek() {
                    if n == '/' || n == '[' {
                        break;
                    }
                    seg.push(n);
                    chars.next();
                }
                out.push(Seg::Key(unescape_pointer(&seg)));
            }
            '[' => {
                let mut field = String::new();
                loop {
                    match chars.next()? {
                        '=' => break,
                        n => field.push(n),
                    }
                }
                let mut k = String::new();
                loop {
                    match chars.next()? {
                        '\\' => k.push(chars.next()?),
                        ']' => break,
                        n => k.push(n),
                    }
                }
                out.push(Seg::Elem { field, key: k });
            }
            _ => return None,
        }
    }
    Some(out)
}

/// True when `key` is `prefix` or lies below it (a seed pointer selecting entries).
pub(crate) fn under(key: &str, prefix: &str) -> bool {
    key == prefix
        || (key.starts_with(prefix)
            && matches!(key.as_bytes().get(prefix.len()), Some(b'/' | b'[')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Seg {
        Seg::Key(s.to_owned())
    }

    #[test]
    fn rules_match_paths_with_wildcards() {
        let rules =
            KeyRules::parse(&["/hooks/*=matcher", "/hooks/*/*/hooks=command:path"]).expect("rules");
        let group = Seg::Elem {
            field: "matcher".into(),
            key: "startup".into(),
        };
        let r = rules
            .rule_for(&[k("hooks"), k("SessionStart")])
            .expect("rule");
        assert_eq!(r.field_name(), "matcher");
        let r = rules
            .rule_for(&[k("hooks"), k("Stop"), group.clone(), k("hooks")])
            .expect("rule");
        assert!(r.path);
        assert!(rules.rule_for(&[k("hooks")]).is_none());
        assert!(rules.rule_for(&[k("other"), k("Stop")]).is_none());
        assert!(rules.any_below(&[k("hooks"), k("Stop"), group]));
        assert!(!rules.any_below(&[k("statusLine")]));
        assert!(KeyRule::parse("hooks=matcher").is_err());
        assert!(KeyRule::parse("/hooks").is_err());
        assert!(KeyRule::parse("/a=").is_err());
    }

    #[test]
    fn canonical_keys_round_trip() {
        let path = vec![
            k("hooks"),
            k("Session/Start[x]~"),
            Seg::Elem {
                field: "matcher".into(),
                key: "a]b\\c".into(),
            },
            k("hooks"),
            Seg::Elem {
                field: "command".into(),
                key: "node /home/u/z/h.js".into(),
            },
        ];
        let key = format_key(&path);
        assert_eq!(
            key,
            "/hooks/Session~1Start~2x]~0[matcher=a\\]b\\\\c]/hooks[command=node /home/u/z/h.js]"
        );
        assert_eq!(parse_key(&key), Some(path));
        assert_eq!(
            parse_key("/permissions/allow[.=Bash(git status)]").map(|p| p.len()),
            Some(3)
        );
        assert_eq!(parse_key("model"), None);
        assert_eq!(parse_key("/a[unterminated"), None);
        assert_eq!(parse_key(""), Some(vec![]));
    }

    #[test]
    fn path_variants_normalize_to_one_key() {
        let resolve = |p: &str| p.strip_prefix("/link/").map(|r| format!("/home/u/{r}"));
        let mut norm = PathNorm::new(Some("/home/u"), Some(&resolve));
        let want = "node /home/u/z/h.js";
        for variant in [
            "node ~/z/h.js",
            "node /home/u/z/h.js",
            "node \"$HOME/z/h.js\"",
            "node '${HOME}/z/h.js'",
            "node   ~/z/h.js",
        ] {
            assert_eq!(norm.normalize(variant), want, "{variant}");
        }
        // The stable form resolves nothing; the resolved form does.
        assert_eq!(norm.normalize("node /link/z/h.js"), "node /link/z/h.js");
        assert_eq!(norm.resolved("node /link/z/h.js"), want);
        // Exact match, never a prefix: a longer command is another entry.
        assert_ne!(norm.normalize("node ~/z/h.js --x"), want);
        assert_eq!(norm.normalize("node \"/a b/c.js\" x"), "node /a b/c.js x");
        assert_eq!(norm.normalize("echo ~user/x"), "echo ~user/x");
        // Only path words lose their quotes: other words compare as written.
        assert_eq!(norm.normalize("echo 'a b'"), "echo 'a b'");
        assert_ne!(norm.normalize("echo 'a b'"), norm.normalize("echo a b"));
        assert_eq!(
            norm.normalize("jq '.hooks | length' ~/s.json"),
            "jq '.hooks | length' /home/u/s.json"
        );
    }

    #[test]
    fn a_symlinked_home_is_written_as_the_home_directory() {
        let resolve = |p: &str| p.strip_prefix("/home/u").map(|r| format!("/data/u{r}"));
        let mut norm = PathNorm::new(Some("/home/u/"), Some(&resolve));
        assert_eq!(norm.normalize("node /data/u/z/h.js"), "node /home/u/z/h.js");
        assert_eq!(norm.normalize("node ~/z/h.js"), "node /home/u/z/h.js");
        assert_eq!(norm.normalize("node /data/uu/h.js"), "node /data/uu/h.js");
    }

    #[test]
    fn seeds_select_by_segment() {
        assert!(under("/model", "/model"));
        assert!(under("/statusLine/type", "/statusLine"));
        assert!(under("/a[x=1]", "/a"));
        assert!(!under("/models", "/model"));
    }
}
