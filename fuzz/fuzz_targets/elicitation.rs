//! Elicitation-schema checking, on both sides of the wire. The input is a `requestedSchema`
//! as a server sends it, a NUL byte, then one typed answer per line.
//!
//! - The wire type: a schema that decodes re-encodes to one that decodes to itself.
//! - The server's rendering of a model's JSON Schema: what it renders, rendered again from its
//!   own encoding, is the same form (rendering is idempotent).
//! - `mcp-term`'s form engine (what a hostile server's schema reaches): an answer the form
//!   accepts passes validation, survives the trip through JSON that an answer file takes, and a
//!   full set of accepted answers passes the form's check; defaults it offers are valid.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mcp_server_core::fuzzing::render_elicitation_schema;
use mcp_term::form::Form;
use mcp_types::elicitation::ElicitationSchema;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (schema, answers) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(raw) = serde_json::from_slice::<Value>(schema) else {
        return;
    };

    // The server's renderer takes any JSON Schema root.
    if let Ok(rendered) = render_elicitation_schema(&raw) {
        let again = render_elicitation_schema(&serde_json::to_value(&rendered).unwrap())
            .expect("a rendered schema renders again");
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&rendered).unwrap()
        );
    }

    let Ok(schema) = serde_json::from_value::<ElicitationSchema>(raw) else {
        return;
    };
    let encoded = serde_json::to_value(&schema).unwrap();
    let decoded: ElicitationSchema = serde_json::from_value(encoded.clone()).unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), encoded);

    let Ok(form) = Form::from_schema(&schema) else {
        return;
    };
    let typed = String::from_utf8_lossy(answers);
    let mut lines = typed.split('\n');
    let mut accepted = BTreeMap::new();
    for field in &form.fields {
        if let Some(default) = &field.default {
            field
                .validate(default)
                .expect("an offered default is valid");
        }
        let Some(line) = lines.next() else {
            break;
        };
        let Ok(value) = field.parse(line) else {
            continue;
        };
        field.validate(&value).expect("a parsed answer is valid");
        let json = serde_json::to_value(&value).unwrap();
        assert_eq!(
            field.from_json(&json).as_ref(),
            Ok(&value),
            "field {:?} accepted {line:?} but not its JSON {json}",
            field.name
        );
        accepted.insert(field.name.clone(), value);
    }
    if form.missing(&accepted).is_empty() {
        let content = form
            .check(&accepted)
            .expect("accepted answers pass the check");
        assert_eq!(content, accepted);
    }
});
