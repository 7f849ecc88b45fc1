//! `batch FILE`: the verbs of a file run one after the other over one connection, so what
//! they share (the session, the server's listings kept while `ttlMs` allows) is paid once.

use clap::Parser;

use crate::cli::{BatchLine, Verb};
use crate::fail::{Fail, usage};

/// A verb of the file, with where it came from for the messages.
#[derive(Debug)]
pub(crate) struct Line {
    pub(crate) number: usize,
    pub(crate) text: String,
    pub(crate) verb: Verb,
}

/// The verbs of a batch file's `text` (`file` names it in messages), every line checked
/// before anything is sent.
pub(crate) fn parse(file: &str, text: &str) -> Result<Vec<Line>, Fail> {
    let mut lines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let (number, line) = (index + 1, raw.trim());
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split_words(line).map_err(|e| usage(format!("batch line {number}: {e}")))?;
        let parsed = BatchLine::try_parse_from(&words).map_err(|e| {
            let first = e.to_string();
            let first = first
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            usage(format!("batch line {number} ({line}): {first}"))
        })?;
        let mut verb = parsed.verb;
        if matches!(
            verb,
            Verb::Resume { .. } | Verb::Servers { .. } | Verb::Batch { .. }
        ) {
            return Err(usage(format!(
                "batch line {number} ({line}): resume, servers and batch do not run inside a batch"
            )));
        }
        let names_target =
            !matches!(verb, Verb::Call { .. } | Verb::Prompt { .. }) && !verb.rest_mut().is_empty();
        if names_target {
            return Err(usage(format!(
                "batch line {number} ({line}): a batch talks to the one server its command \
                 line names; give no target on a line"
            )));
        }
        lines.push(Line {
            number,
            text: line.to_owned(),
            verb,
        });
    }
    if lines.is_empty() {
        return Err(usage(format!(
            "batch {file}: no verb (only empty lines and # comments)"
        )));
    }
    Ok(lines)
}

/// A line split into words as a shell would: blanks separate, `'…'` is literal, `"…"` takes
/// `\"` and `\\`, and a backslash outside quotes escapes the next character.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a ' is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a \" is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a \" is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("the line ends with a lone \\".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_as_a_shell_splits_them() {
        assert_eq!(
            split_words(r#"call book   date="2026-12-24" note='a "quiet" table' x\ y """#).unwrap(),
            [
                "call",
                "book",
                "date=2026-12-24",
                r#"note=a "quiet" table"#,
                "x y",
                ""
            ]
        );
        assert_eq!(
            split_words(r#"call f text="say \"hi\" \\ \n""#).unwrap(),
            ["call", "f", r#"text=say "hi" \ \n"#]
        );
        assert_eq!(split_words("  tools  ").unwrap(), ["tools"]);
    }

    #[test]
    fn an_open_quote_is_refused() {
        assert_eq!(split_words("call f a='x").unwrap_err(), "a ' is not closed");
        assert_eq!(
            split_words("call f a=\"x").unwrap_err(),
            "a \" is not closed"
        );
        assert_eq!(
            split_words("call f \\").unwrap_err(),
            "the line ends with a lone \\"
        );
    }

    fn lines_of(text: &str) -> Result<Vec<Line>, String> {
        parse("plan.txt", text).map_err(|f| f.message)
    }

    #[test]
    fn lines_are_parsed_before_anything_runs() {
        let lines =
            lines_of("# the menu\n\ntools --schema\ncall book_table date=2026-12-24\n").unwrap();
        assert_eq!(lines.iter().map(|l| l.number).collect::<Vec<_>>(), [3, 4]);
        assert!(matches!(lines[0].verb, Verb::Tools { schema: true, .. }));
        assert!(matches!(&lines[1].verb, Verb::Call { name, params, .. }
            if name == "book_table" && params == &["date=2026-12-24"]));
    }

    #[test]
    fn what_cannot_run_in_a_batch_names_its_line() {
        assert_eq!(
            lines_of("tools\ntools --timeout 5\n").unwrap_err(),
            "batch line 2 (tools --timeout 5): unexpected argument '--timeout' found"
        );
        assert_eq!(
            lines_of("tools http://elsewhere.example/mcp\n").unwrap_err(),
            "batch line 1 (tools http://elsewhere.example/mcp): a batch talks to the one \
             server its command line names; give no target on a line"
        );
        assert_eq!(
            lines_of("batch other.txt\n").unwrap_err(),
            "batch line 1 (batch other.txt): resume, servers and batch do not run inside a batch"
        );
        assert_eq!(
            lines_of("# nothing\n\n").unwrap_err(),
            "batch plan.txt: no verb (only empty lines and # comments)"
        );
    }
}
