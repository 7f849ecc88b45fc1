//! Zero-downtime rotation: `[old, new]` → `[new, old]` → `[new]`. keys[0] seals,
//! every key verifies; a retired key's tokens stop verifying.

use mcp_state_seal::{
    Codec, KeyError, KeyRing, RejectReason, RequestBinding, RequestStateSecurity,
};

const OLD: &str = "old-secret-0123456789abcdef-0123456789";
const NEW: &str = "new-secret-0123456789abcdef-0123456789";

fn boundary(keys: &[&str]) -> mcp_state_seal::SealingBoundary {
    RequestStateSecurity::keys(keys)
        .unwrap()
        .bind(Some("fleet"))
        .unwrap()
}

#[test]
fn each_rotation_phase_reads_the_previous_phase() {
    let binding = RequestBinding::new("tools/call", "deploy", None);
    let phase1 = boundary(&[OLD, NEW]);
    let phase2 = boundary(&[NEW, OLD]);
    let phase3 = boundary(&[NEW]);

    let from_phase1 = phase1.seal(&binding, "s1", None).unwrap();
    assert_eq!(phase2.unseal(&binding, &from_phase1, None).unwrap(), "s1");
    assert_eq!(phase1.unseal(&binding, &from_phase1, None).unwrap(), "s1");

    let from_phase2 = phase2.seal(&binding, "s2", None).unwrap();
    assert_eq!(phase3.unseal(&binding, &from_phase2, None).unwrap(), "s2");
    // Instances still in phase 1 already read what phase 2 seals.
    assert_eq!(phase1.unseal(&binding, &from_phase2, None).unwrap(), "s2");

    // Phase 1 sealed with OLD, which phase 3 has retired.
    let err = phase3.unseal(&binding, &from_phase1, None).unwrap_err();
    assert_eq!(err.reason(), RejectReason::UnknownKey);
}

#[test]
fn the_first_key_seals() {
    let old_first = KeyRing::new([OLD, NEW]).unwrap();
    let new_only = KeyRing::new([NEW]).unwrap();
    let old_only = KeyRing::new([OLD]).unwrap();
    let kids: Vec<_> = old_first.kids().collect();
    assert_eq!(kids.len(), 2);
    assert_eq!(kids[0], old_only.kids().next().unwrap());
    let token = old_first.seal(b"x").unwrap();
    assert!(old_only.unseal(&token).is_ok());
    assert_eq!(
        new_only.unseal(&token).unwrap_err().reason(),
        RejectReason::UnknownKey
    );
}

#[test]
fn ring_construction_errors_name_the_cause() {
    let none: [&str; 0] = [];
    assert_eq!(KeyRing::new(none).unwrap_err(), KeyError::Empty);
    assert_eq!(
        KeyRing::new([NEW, "short"]).unwrap_err(),
        KeyError::TooShort { index: 1, len: 5 }
    );
    assert_eq!(
        KeyRing::new([OLD, NEW, OLD]).unwrap_err(),
        KeyError::Duplicate {
            index: 2,
            duplicate_of: 0
        }
    );
    // Text and its UTF-8 bytes are the same key.
    assert_eq!(
        KeyRing::new([OLD.as_bytes().to_vec(), OLD.as_bytes().to_vec()]).unwrap_err(),
        KeyError::Duplicate {
            index: 1,
            duplicate_of: 0
        }
    );
    // 31 bytes is short, 32 is enough.
    assert!(KeyRing::new([[1u8; 31]]).is_err());
    assert!(KeyRing::new([[1u8; 32]]).is_ok());

    let short = KeyError::TooShort { index: 1, len: 5 }.to_string();
    assert_eq!(
        short,
        "request-state keys must be at least 32 bytes of secret randomness; keys[1] is 5 bytes. \
         Generate one with `openssl rand -hex 32`"
    );
    assert!(KeyError::Empty.to_string().contains("openssl rand -hex 32"));
    assert_eq!(
        KeyError::Duplicate {
            index: 2,
            duplicate_of: 0
        }
        .to_string(),
        "keys[2] duplicates keys[0]: every key in the request-state ring must be different \
         (remove the repeated one)"
    );
    assert!(RequestStateSecurity::keys([NEW, "short"]).is_err());
}

#[test]
fn ephemeral_policies_cannot_read_each_other() {
    let binding = RequestBinding::new("tools/call", "deploy", None);
    let a = RequestStateSecurity::ephemeral()
        .bind(Some("same-name"))
        .unwrap();
    let b = RequestStateSecurity::ephemeral()
        .bind(Some("same-name"))
        .unwrap();
    let token = a.seal(&binding, "mine", None).unwrap();
    assert_eq!(a.unseal(&binding, &token, None).unwrap(), "mine");
    assert_eq!(
        b.unseal(&binding, &token, None).unwrap_err().reason(),
        RejectReason::UnknownKey
    );
    // A clone of a bound boundary shares its key.
    let a2 = a.clone();
    assert_eq!(a2.unseal(&binding, &token, None).unwrap(), "mine");
}
