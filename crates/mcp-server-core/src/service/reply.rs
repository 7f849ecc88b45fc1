//! The last step of every answer: a result stamped (`_meta`: server info, cache hints) and
//! serialized, or the error it failed with.

use mcp_types::ErrorObject;
use mcp_types::version::Era;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::stamp::{Stamp, Stamped};

use crate::service::Inner;
use crate::service::inner::{serialize_error, to_raw};

pub(super) fn finish<T: Stamped + Serialize>(
    inner: &Inner,
    era: Era,
    mut result: T,
) -> Result<Box<RawValue>, ErrorObject> {
    match era {
        Era::Modern => {
            let stamp = Stamp {
                server_info: &inner.server.info,
                cache: inner.server.cache,
            };
            result
                .write_modern(&stamp, &inner.server_info)
                .map_err(serialize_error)
        }
        Era::Legacy => {
            result.strip_legacy();
            to_raw(&result)
        }
    }
}
