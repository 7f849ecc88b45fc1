//! Rate-limit buckets shared by a fleet.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::BoxFuture;
use mcp_server_core::policy::{Admission, Rate, RateStore, RateStoreError};

use crate::Shared;

/// Takes a token from the bucket `KEYS[1]` of `ARGV[1]` tokens refilling at `ARGV[2]` tokens
/// per millisecond, on Redis's clock (every instance reads the same one): `{1, 0}` when
/// taken, `{0, ms}` with the wait until one is there. The bucket expires once it would be
/// full again, so Redis holds only the callers of the last refill period.
const TAKE: &str = r"
local cap = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then
  tokens = cap
  at = now
end
tokens = math.min(cap, tokens + math.max(0, now - at) * per_ms)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(cap / per_ms) + 1000)
return {allowed, wait}
";

/// Rate-limit buckets in Redis ([`RateStore`]), from
/// [`RedisStores::rate_store`](crate::RedisStores::rate_store): every instance of a fleet
/// spends from the same bucket of a caller, so a limit of 5 calls a minute is 5 for the
/// fleet, not 5 per instance. Each bucket is a small hash `{prefix}:rate:{limit}:{caller}`
/// that expires once it would have refilled. When Redis does not answer within the command
/// deadline the store fails, and the limit refuses the call (fails closed).
#[derive(Clone)]
pub struct RedisRates {
    shared: Arc<Shared>,
    take: Arc<redis::Script>,
}

impl fmt::Debug for RedisRates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRates")
            .field("prefix", &self.shared.config.prefix)
            .finish()
    }
}

impl RedisRates {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisRates {
            shared,
            take: Arc::new(redis::Script::new(TAKE)),
        }
    }
}

impl RateStore for RedisRates {
    fn take<'a>(
        &'a self,
        key: &'a str,
        rate: Rate,
    ) -> BoxFuture<'a, Result<Admission, RateStoreError>> {
        Box::pin(async move {
            let per_ms = f64::from(rate.count()) / (rate.per().as_secs_f64() * 1000.0);
            let mut invocation = self.take.key(self.shared.key(&["rate", key]));
            invocation.arg(rate.count()).arg(per_ms);
            let (allowed, wait): (i64, i64) = self
                .shared
                .script("rate limit bucket", &invocation)
                .await
                .map_err(RateStoreError)?;
            Ok(if allowed == 1 {
                Admission::Allowed
            } else {
                Admission::Refused {
                    retry_after: Duration::from_millis(u64::try_from(wait).unwrap_or(1).max(1)),
                }
            })
        })
    }
}
