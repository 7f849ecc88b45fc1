//! Names under a prefix: `weather` + `_` + `forecast` = `weather_forecast`, and back.

use std::sync::Arc;

use crate::error::GatewayError;

/// The separators a gateway may put between a prefix and a name.
pub const SEPARATORS: [char; 3] = ['_', '.', '-'];

/// The longest prefix accepted, in bytes.
pub const MAX_PREFIX: usize = 64;

/// One mount's prefix and the gateway's separator. An empty prefix leaves names as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Namespace {
    prefix: Arc<str>,
    separator: char,
    /// How the mount is named in errors and logs.
    label: Arc<str>,
}

impl Namespace {
    /// A namespace, once the prefix and the separator are valid.
    pub(crate) fn new(prefix: &str, separator: char) -> Result<Namespace, GatewayError> {
        check_separator(separator)?;
        check_prefix(prefix)?;
        Ok(Namespace {
            prefix: prefix.into(),
            separator,
            label: if prefix.is_empty() { "(root)" } else { prefix }.into(),
        })
    }

    /// The name a mount's upstream knows as `name`, as the gateway exposes it.
    pub(crate) fn qualify(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            return name.to_owned();
        }
        let mut out = String::with_capacity(self.prefix.len() + 1 + name.len());
        out.push_str(&self.prefix);
        out.push(self.separator);
        out.push_str(name);
        out
    }

    /// The upstream's own name of a qualified `name`, or `None` when `name` is not under this
    /// prefix.
    pub(crate) fn strip<'a>(&self, name: &'a str) -> Option<&'a str> {
        if self.prefix.is_empty() {
            return Some(name);
        }
        let rest = name.strip_prefix(&*self.prefix)?;
        let rest = rest.strip_prefix(self.separator)?;
        (!rest.is_empty()).then_some(rest)
    }

    /// An upstream's error message with the names it quotes qualified: `Unknown tool: x`
    /// becomes `Unknown tool: {prefix}{sep}x`, so the caller reads the name it sent.
    pub(crate) fn rewrite_message(&self, message: &str) -> String {
        const UNKNOWN: &str = "Unknown tool: ";
        match message.strip_prefix(UNKNOWN) {
            Some(name) if !self.prefix.is_empty() => {
                format!("{UNKNOWN}{}", self.qualify(name))
            }
            _ => message.to_owned(),
        }
    }

    /// How the mount is named in errors and logs: its prefix, or for a root mount
    /// `(root: {server})` once [`named`](Self::named), `(root)` before.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Names a root mount after its server (several may share the root); a prefix names
    /// itself.
    pub(crate) fn named(mut self, server: &str) -> Namespace {
        if self.prefix.is_empty() {
            self.label = format!("(root: {server})").into();
        }
        self
    }
}

/// Refuses a separator other than `_`, `.` and `-`.
pub(crate) fn check_separator(separator: char) -> Result<(), GatewayError> {
    if SEPARATORS.contains(&separator) {
        Ok(())
    } else {
        Err(GatewayError::InvalidSeparator { separator })
    }
}

/// Refuses a prefix with characters outside `[A-Za-z0-9_.-]`, or longer than [`MAX_PREFIX`].
pub(crate) fn check_prefix(prefix: &str) -> Result<(), GatewayError> {
    let invalid = |why: String| GatewayError::InvalidPrefix {
        prefix: prefix.to_owned(),
        why,
    };
    if prefix.len() > MAX_PREFIX {
        return Err(invalid(format!(
            "{} bytes, over the {MAX_PREFIX}-byte limit",
            prefix.len()
        )));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || SEPARATORS.contains(c)))
    {
        return Err(invalid(format!(
            "{c:?} is not one of A-Z, a-z, 0-9, '_', '.', '-'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_qualifies_and_strips_with_its_separator() {
        let ns = Namespace::new("weather", '_').unwrap();
        assert_eq!(ns.qualify("forecast"), "weather_forecast");
        assert_eq!(ns.strip("weather_forecast"), Some("forecast"));
        assert_eq!(ns.strip("weather_"), None);
        assert_eq!(ns.strip("weather.forecast"), None);
        assert_eq!(ns.strip("weatherforecast"), None);
        assert_eq!(ns.strip("files_read"), None);
        let dotted = Namespace::new("w", '.').unwrap();
        assert_eq!(dotted.qualify("a_b"), "w.a_b");
        assert_eq!(dotted.strip("w.a_b"), Some("a_b"));
    }

    #[test]
    fn the_root_mount_keeps_names() {
        let ns = Namespace::new("", '_').unwrap();
        assert_eq!(ns.qualify("echo"), "echo");
        assert_eq!(ns.strip("echo"), Some("echo"));
        assert_eq!(ns.label(), "(root)");
        assert_eq!(ns.clone().named("Files").label(), "(root: Files)");
        assert_eq!(
            Namespace::new("a", '_').unwrap().named("Files").label(),
            "a"
        );
        assert_eq!(ns.rewrite_message("Unknown tool: x"), "Unknown tool: x");
    }

    #[test]
    fn invalid_prefixes_and_separators_are_refused_saying_why() {
        assert_eq!(
            Namespace::new("bad prefix!", '_').unwrap_err().to_string(),
            "invalid prefix \"bad prefix!\": ' ' is not one of A-Z, a-z, 0-9, '_', '.', '-'"
        );
        assert_eq!(
            Namespace::new(&"p".repeat(65), '_')
                .unwrap_err()
                .to_string(),
            format!(
                "invalid prefix {:?}: 65 bytes, over the 64-byte limit",
                "p".repeat(65)
            )
        );
        assert_eq!(
            Namespace::new("ok", '/').unwrap_err().to_string(),
            "invalid separator '/': it must be one of '_', '.' or '-'"
        );
        assert!(Namespace::new("a-b.c_9", '-').is_ok());
    }

    #[test]
    fn unknown_tool_messages_name_the_qualified_tool() {
        let ns = Namespace::new("a", '_').unwrap();
        assert_eq!(ns.rewrite_message("Unknown tool: zz"), "Unknown tool: a_zz");
        assert_eq!(ns.rewrite_message("Something else"), "Something else");
    }
}
