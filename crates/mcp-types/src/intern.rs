//! The values a client repeats in every request's `_meta` (its `clientCapabilities` and
//! `clientInfo`, a server's `serverInfo` in every result), read once per thread while they
//! stay the same.
//!
//! A client sends the same bytes for these with every request. Reading them into their types
//! is several allocations (and as many frees when the request ends), where the floor a server
//! is measured against reads nothing of `_meta`. With `std`, [`Shared`](crate::de::Shared)
//! asks serde_json for the value's text as it came (skimmed, not decoded) and compares it
//! with the text of the last value of the type read on this thread: the same text is the same
//! value, and is one reference count more on it. Other text is read into the type as before
//! and kept in its place. Each thread keeps one value of each type, of text at most
//! [`MAX_TEXT`] bytes: a peer can make the cache miss, never grow.
//!
//! Any deserializer other than serde_json's (serde's buffered content, for one) hands the
//! value over as it is, and it is read as it always was.

use alloc::sync::Arc;
#[cfg(feature = "std")]
use core::fmt;
#[cfg(feature = "std")]
use core::marker::PhantomData;

#[cfg(feature = "std")]
use serde::de::{self, MapAccess, Visitor};
use serde::de::{DeserializeOwned, Deserializer};

#[allow(unused_imports)]
use crate::prelude::*;

/// The name serde_json gives a value it should hand over as its text: a newtype struct of
/// this name is read as a one-member map, that name to the text ([`crate::frame`] hands a
/// text to `RawValue` under it too).
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The longest text kept: `clientCapabilities` with a few extensions and a `clientInfo`
/// with icons fit many times over.
#[cfg(feature = "std")]
pub(crate) const MAX_TEXT: usize = 4096;

/// A type read once per thread while its text stays the same.
pub(crate) trait Interned: DeserializeOwned + Send + Sync + 'static {
    /// Runs `f` with this type's place on this thread.
    #[cfg(feature = "std")]
    fn with_slot<R>(f: impl FnOnce(&Slot<Self>) -> R) -> R;
}

/// One thread's last value of a type, with the text it was read from.
#[cfg(feature = "std")]
pub(crate) type Slot<T> = core::cell::RefCell<Option<(Box<str>, Arc<T>)>>;

macro_rules! interned {
    ($($t:ty),*) => {$(
        impl Interned for $t {
            #[cfg(feature = "std")]
            fn with_slot<R>(f: impl FnOnce(&Slot<Self>) -> R) -> R {
                std::thread_local! {
                    static SLOT: Slot<$t> = const { core::cell::RefCell::new(None) };
                }
                SLOT.with(f)
            }
        }
    )*};
}

interned!(
    crate::capabilities::ClientCapabilities,
    crate::lifecycle::Implementation
);

/// Reads a `T` into an `Arc`, from the thread's last one when its text is the same.
pub(crate) fn read<'de, T: Interned, D: Deserializer<'de>>(d: D) -> Result<Arc<T>, D::Error> {
    #[cfg(feature = "std")]
    {
        d.deserialize_newtype_struct(RAW_VALUE_TOKEN, TextOrValue(PhantomData))
    }
    #[cfg(not(feature = "std"))]
    {
        T::deserialize(d).map(Arc::new)
    }
}

/// `text`, read as a `T`: the thread's last one when it was read from the same text.
#[cfg(feature = "std")]
fn from_text<T: Interned>(text: &str) -> Result<Arc<T>, serde_json::Error> {
    if text.len() > MAX_TEXT {
        return serde_json::from_str(text).map(Arc::new);
    }
    let seen = T::with_slot(|slot| {
        let slot = slot.try_borrow().ok()?;
        let (seen, value) = slot.as_ref()?;
        (**seen == *text).then(|| value.clone())
    });
    if let Some(value) = seen {
        return Ok(value);
    }
    let value = Arc::new(serde_json::from_str::<T>(text)?);
    T::with_slot(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some((text.into(), value.clone()));
        }
    });
    Ok(value)
}

/// What a `T`'s text said was wrong, without where in that text: the deserializer the text
/// came from says where in the whole input (the end of the value).
#[cfg(feature = "std")]
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match (e.line(), message.rfind(" at line ")) {
        (1.., Some(at)) => message[..at].to_owned(),
        _ => message,
    }
}

/// The visitor of [`read`]: serde_json hands the value's text over as a one-member map;
/// anything else hands the value itself over.
#[cfg(feature = "std")]
struct TextOrValue<T>(PhantomData<T>);

#[cfg(feature = "std")]
impl<'de, T: Interned> Visitor<'de> for TextOrValue<T> {
    type Value = Arc<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arc<T>, A::Error> {
        match map.next_key::<Token>()? {
            Some(Token) => {}
            None => return Err(de::Error::custom("a raw value without its text")),
        }
        let text: Text<'de> = map.next_value()?;
        let text = match &text {
            Text::Borrowed(text) => text,
            Text::Owned(text) => text.as_str(),
        };
        from_text(text).map_err(|e| de::Error::custom(without_position(&e)))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Arc<T>, D::Error> {
        T::deserialize(d).map(Arc::new)
    }
}

/// The one member name of serde_json's raw-value map (whatever its spelling: serde_json
/// gives no other map to a newtype of this name).
#[cfg(feature = "std")]
struct Token;

#[cfg(feature = "std")]
impl<'de> de::Deserialize<'de> for Token {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl Visitor<'_> for Any {
            type Value = Token;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("serde_json's raw value name")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Token, E> {
                Ok(Token)
            }
        }
        d.deserialize_identifier(Any)
    }
}

/// The value's text: borrowed from the input when it can be.
#[cfg(feature = "std")]
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

#[cfg(feature = "std")]
impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a raw value's text")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text::Owned(v))
            }
        }
        d.deserialize_str(Any)
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::capabilities::ClientCapabilities;
    use crate::meta::Meta;

    const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
    const INFO: &str = "io.modelcontextprotocol/clientInfo";

    fn meta(caps: &str) -> Meta {
        serde_json::from_str(&format!(
            r#"{{"{CAPS}": {caps}, "{INFO}": {{"name":"c","version":"1"}}}}"#
        ))
        .unwrap()
    }

    fn caps(meta: &Meta) -> &Arc<ClientCapabilities> {
        meta.client_capabilities.as_ref().unwrap()
    }

    #[test]
    fn the_same_text_again_is_the_same_value_and_other_text_is_read() {
        let a = r#"{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;
        let (first, again) = (meta(a), meta(a));
        assert!(Arc::ptr_eq(caps(&first), caps(&again)));
        assert!(Arc::ptr_eq(
            first.client_info.as_ref().unwrap(),
            again.client_info.as_ref().unwrap()
        ));
        let fresh: ClientCapabilities = serde_json::from_str(a).unwrap();
        assert_eq!(**caps(&first), fresh);
        // Other text (one space more): read, equal to a fresh read, and kept in its place.
        let b = r#"{"elicitation":{"form":{}}, "extensions":{"io.modelcontextprotocol/tasks":{}}}"#;
        let other = meta(b);
        assert!(!Arc::ptr_eq(caps(&first), caps(&other)));
        assert_eq!(**caps(&other), fresh);
        assert!(Arc::ptr_eq(caps(&other), caps(&meta(b))));
        let c = r#"{"roots":{"listChanged":true}}"#;
        assert_eq!(
            **caps(&meta(c)),
            serde_json::from_str::<ClientCapabilities>(c).unwrap()
        );
        assert!(caps(&meta(c)).roots.is_some());
    }

    #[test]
    fn text_longer_than_the_limit_is_read_every_time() {
        let long = format!(
            r#"{{"experimental":{{"x":{{"pad":"{}"}}}}}}"#,
            "p".repeat(MAX_TEXT)
        );
        let (a, b) = (meta(&long), meta(&long));
        assert!(!Arc::ptr_eq(caps(&a), caps(&b)));
        assert_eq!(caps(&a), caps(&b));
    }

    #[test]
    fn a_value_from_any_deserializer_is_read_as_before() {
        // serde_json's `Value` hands its text over too (written anew).
        let value =
            serde_json::json!({CAPS: {"elicitation": {}}, INFO: {"name": "v", "version": "2"}});
        let from_value: Meta = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(
            from_value,
            serde_json::from_str(&value.to_string()).unwrap()
        );
        assert_eq!(from_value.client_info.as_ref().unwrap().name, "v");
        // serde's buffered content (an untagged enum) hands the value itself over.
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            Meta(Meta),
        }
        let Either::Meta(buffered) = serde_json::from_value(value).unwrap();
        assert_eq!(buffered, from_value);
        // `null` is no value, as before.
        let none: Meta = serde_json::from_str(&format!(r#"{{"{CAPS}":null}}"#)).unwrap();
        assert!(none.client_capabilities.is_none());
    }

    /// The message is the type's own; the place is in the whole input, where the reading
    /// stopped (no longer the byte inside the value: that was a place in the value's text).
    #[test]
    fn a_value_that_does_not_read_says_what_and_where_in_the_whole_input() {
        let text = format!(r#"{{"{CAPS}": {{"elicitation": 5}}}}"#);
        let error = serde_json::from_str::<Meta>(&text).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "invalid type: integer `5`, expected the elicitation capability at line 1 column {}",
                text.len()
            )
        );
        // Text that is not JSON at all is refused by the skim, where it stops.
        let broken = format!(r#"{{"{CAPS}": {{"elicitation" 5}}}}"#);
        let error = serde_json::from_str::<Meta>(&broken)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("expected `:` at line 1 column"),
            "{error}"
        );
    }
}
