//! Schema migrations, shared by SQLite and PostgreSQL.

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_tenancy;
mod m20261122_000002_conversations;
mod m20261122_000003_buyer;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_tenancy::Migration),
            Box::new(m20261122_000002_conversations::Migration),
            Box::new(m20261122_000003_buyer::Migration),
        ]
    }
}
