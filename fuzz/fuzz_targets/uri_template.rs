//! URI-template matching (the resource templates of `McpServer`). The input is a template
//! line, a URI line, then one value per line. Properties: a URI that matches expands back
//! from its variables to itself; values that the template can tell apart (non-empty, no `/`
//! in a simple variable, not running into the literal that follows) expand to a URI that
//! matches with exactly those values.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mcp_server_core::fuzzing::uri_template_matches;

/// One piece of a template, parsed here independently of the crate's parser.
enum Piece<'a> {
    Literal(&'a str),
    Var { name: &'a str, reserved: bool },
}

/// The template's pieces, for templates the crate's parser accepted.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Literal(&rest[..open]));
        }
        let close = open + rest[open..].find('}').expect("the parser accepted it");
        let expr = &rest[open + 1..close];
        out.push(match expr.strip_prefix('+') {
            Some(name) => Piece::Var {
                name,
                reserved: true,
            },
            None => Piece::Var {
                name: expr,
                reserved: false,
            },
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    out
}

fn expand(pieces: &[Piece<'_>], vars: &BTreeMap<String, String>) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Literal(l) => (*l).to_owned(),
            Piece::Var { name, .. } => vars[*name].clone(),
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let template = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let values: Vec<&str> = lines.collect();

    let Ok(matched) = uri_template_matches(template, uri) else {
        return;
    };
    let pieces = pieces(template);
    if let Some(vars) = &matched {
        assert_eq!(
            expand(&pieces, vars),
            uri,
            "a match must expand back to the URI"
        );
        for piece in &pieces {
            if let Piece::Var { name, reserved } = piece {
                let value = &vars[*name];
                assert!(!value.is_empty());
                assert!(*reserved || !value.contains('/'));
            }
        }
    }

    // Values the template can tell apart come back as they went in.
    let mut vars = BTreeMap::new();
    let mut distinguishable = true;
    let mut next_value = values.iter();
    for (i, piece) in pieces.iter().enumerate() {
        let Piece::Var { name, reserved } = piece else {
            continue;
        };
        let value = next_value.next().copied().unwrap_or("v");
        let follows = match pieces.get(i + 1) {
            Some(Piece::Literal(l)) => Some(*l),
            _ => None,
        };
        let ok = !value.is_empty()
            && (*reserved || !value.contains('/'))
            && follows.is_none_or(|l| format!("{value}{l}").find(l) == Some(value.len()));
        // A name used twice must carry one value.
        if let Some(previous) = vars.insert((*name).to_owned(), value.to_owned()) {
            distinguishable &= previous == value;
        }
        distinguishable &= ok;
    }
    if distinguishable {
        let uri = expand(&pieces, &vars);
        assert_eq!(
            uri_template_matches(template, &uri).unwrap(),
            Some(vars),
            "expanding {template:?} gave {uri:?}"
        );
    }
});
