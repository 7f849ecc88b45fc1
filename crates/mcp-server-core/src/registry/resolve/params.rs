//! Converting resolved values into the handler's parameters.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;

use crate::registry::{FromResolved, ResolveError, Resolved, ResolvedParam, Resolver};

pub(crate) fn convert<C: FromResolved>(
    resolved: &Resolved,
) -> Result<Box<dyn Any + Send>, ResolveError> {
    C::from_resolved(resolved).map(|c| Box::new(c) as Box<dyn Any + Send>)
}

/// The resolved parameters of one call, converted before the body runs.
#[derive(Default)]
pub struct ResolvedValues {
    pub(super) values: HashMap<String, Box<dyn Any + Send>>,
}

impl fmt::Debug for ResolvedValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl ResolvedValues {
    /// Takes the value of parameter `param` as the type it was declared with.
    pub fn take<C: FromResolved>(&mut self, param: &str) -> Result<C, String> {
        let boxed = self
            .values
            .remove(param)
            .ok_or_else(|| format!("parameter '{param}' has no resolved value"))?;
        boxed
            .downcast::<C>()
            .map(|b| *b)
            .map_err(|_| format!("parameter '{param}' was declared with another type"))
    }
}

/// Declares parameter `param`, filled by `resolver` as type `C` (the builders' `resolve`).
pub(crate) fn add_resolved<C: FromResolved>(
    params: &mut Vec<ResolvedParam>,
    resolvers: &mut Vec<Resolver>,
    param: String,
    resolver: Resolver,
) {
    params.push(ResolvedParam {
        param,
        key: resolver.key.clone(),
        check: C::check,
        convert: convert::<C>,
    });
    add_resolver(resolvers, resolver);
}

/// Registers `resolver` once (by key).
pub(crate) fn add_resolver(resolvers: &mut Vec<Resolver>, resolver: Resolver) {
    if !resolvers.iter().any(|r| r.key == resolver.key) {
        resolvers.push(resolver);
    }
}

/// Converts every declared parameter; the first failure ends the call before the body runs.
pub(crate) fn convert_params(
    params: &[ResolvedParam],
    values: &HashMap<String, Resolved>,
) -> Result<ResolvedValues, String> {
    let mut out = ResolvedValues::default();
    for p in params {
        let Some(resolved) = values.get(&p.key) else {
            return Err(format!(
                "Resolver for parameter '{}' produced no value",
                p.param
            ));
        };
        let value = (p.convert)(resolved).map_err(|e| {
            format!(
                "Resolver for parameter '{}' could not resolve: {e}",
                p.param
            )
        })?;
        out.values.insert(p.param.clone(), value);
    }
    Ok(out)
}
