//! The client's SSE parser: for any byte stream, the events do not depend on where the reads
//! split it (so a character or a CRLF split across two reads is never corrupted), and an event
//! over the cap abandons the stream instead of growing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_transport_http::fuzzing::sse_events;

const CAP: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let whole = sse_events([stream], CAP);
    // One split at a position chosen by the input, then one byte per read.
    let at = usize::from(split) * stream.len() / 256;
    let (a, b) = stream.split_at(at);
    let halves = sse_events([a, b], CAP);
    let bytes = sse_events(stream.chunks(1), CAP);
    if !whole.1 {
        assert_eq!(whole, halves, "split at {at}");
        assert_eq!(whole, bytes, "one byte per read");
    } else {
        assert!(halves.1 && bytes.1, "the cap does not depend on the reads");
        assert_eq!(whole.0, halves.0);
        assert_eq!(whole.0, bytes.0);
    }
    for (_, _, data) in &whole.0 {
        if let Some(data) = data {
            assert!(data.len() <= CAP);
        }
    }
});
