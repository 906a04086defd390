//! The narrow context every operation runs with: the database, the bus, the
//! configuration, the shutdown signal, and the handles domains registered
//! for themselves (rooms, caches, registries), looked up by type. The core
//! names no domain.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::config::Config;
use crate::error::ApiError;

#[derive(Clone)]
pub struct Ctx {
    pub db: DatabaseConnection,
    pub bus: EventBus,
    pub config: Arc<Config>,
    /// Cancelled on SIGINT/SIGTERM: long-lived streams end, workers drain.
    pub shutdown: CancellationToken,
    /// Serializes write transactions on SQLite (see [`crate::db::WriteGate`]).
    pub writes: crate::db::WriteGate,
    /// `AGENTIC_PUBLIC_URL`, or `http://{bound address}`, without a final `/`.
    pub public_url: Arc<str>,
    /// The operations this server offers (the dispatcher's and tools' list).
    pub operations: super::Registry,
    /// The event streams a stream token can open.
    pub streams: super::StreamRoutes,
    /// The domains' handles, by type (see [`Ctx::get`]).
    pub handles: Registered,
}

/// Domain handles once the server is assembled, shared by every clone.
#[derive(Clone, Default)]
pub struct Registered(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl From<Handles> for Registered {
    fn from(handles: Handles) -> Self {
        Registered(Arc::new(handles.0))
    }
}

/// Collects domain handles while the server is assembled.
#[derive(Default)]
pub struct Handles(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Handles {
    pub fn insert<T: Any + Send + Sync>(&mut self, handle: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(handle));
    }
}

impl Ctx {
    /// The handle a domain registered, by type.
    pub fn get<T: Any + Send + Sync>(&self) -> Result<&T, ApiError> {
        self.handles
            .0
            .get(&TypeId::of::<T>())
            .and_then(|h| h.downcast_ref::<T>())
            .ok_or_else(|| {
                ApiError::internal(format!(
                    "no handle {} registered",
                    std::any::type_name::<T>()
                ))
            })
    }
}
